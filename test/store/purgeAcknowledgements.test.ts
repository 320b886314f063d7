import { describe, expect, it } from 'vitest';
import { PurgeAcknowledgements } from '../../src/store/purgeAcknowledgements.js';

describe('PurgeAcknowledgements', () => {
  it('holds once as many distinct replicas as PUBLISH counted acknowledged: a barrier or acknowledgement sent twice counts once', async () => {
    const acknowledgements = new PurgeAcknowledgements('A', 1000);
    let settled = false;
    const collected = acknowledgements.collect(Promise.resolve(), async (payload) => {
      expect(payload).toBe('A:1');
      // ioredis sent the barrier again after a reconnection: every replica acknowledges twice.
      for (const replica of ['A', 'B', 'A', 'B']) acknowledgements.acknowledged('1', replica);
      return { subscribers: 3, registered: [], registryTrusted: true };
    });
    void collected.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBe(false);
    acknowledgements.acknowledged('1', 'C');
    await collected;
    expect(settled).toBe(true);
  });

  it('rejects after its timeout with how many replicas acknowledged, acknowledgements of other barriers not counting', async () => {
    const acknowledgements = new PurgeAcknowledgements('A', 50);
    const collected = acknowledgements.collect(Promise.resolve(), async () => {
      acknowledgements.acknowledged('1', 'A');
      acknowledgements.acknowledged('2', 'B');
      return { subscribers: 2, registered: [], registryTrusted: true };
    });
    await expect(collected).rejects.toThrow('local caches did not acknowledge the purge within 50 ms (1 of 2 acknowledged)');
  });

  // The reload/Redis audit: Redis dropped a paused replica's subscriber, PUBLISH counted only the
  // purging replica, and the purge answered true while the paused one served the purged entry.
  it('waits for every registered replica too, though fewer subscribers received the barrier', async () => {
    const acknowledgements = new PurgeAcknowledgements('A', 50);
    const collected = acknowledgements.collect(Promise.resolve(), async () => {
      acknowledgements.acknowledged('1', 'A');
      return { subscribers: 1, registered: ['A', 'B'], registryTrusted: true };
    });
    await expect(collected).rejects.toThrow('local caches did not acknowledge the purge within 50 ms (1 of 1 acknowledged; registered and silent: B)');
    const answered = new PurgeAcknowledgements('A', 1000);
    await answered.collect(Promise.resolve(), async () => {
      answered.acknowledged('1', 'A');
      answered.acknowledged('1', 'B');
      return { subscribers: 1, registered: ['A', 'B'], registryTrusted: true };
    });
  });

  // The review of the registry: a Redis restarted without its data lost the registrations, and a
  // paused replica could still serve what the purge removed.
  it('fails at once when the registry cannot be trusted, whoever acknowledged', async () => {
    const acknowledgements = new PurgeAcknowledgements('A', 1000);
    const collected = acknowledgements.collect(Promise.resolve(), async () => {
      acknowledgements.acknowledged('1', 'A');
      return { subscribers: 1, registered: ['A'], registryTrusted: false };
    });
    await expect(collected).rejects.toThrow('the registry of replicas serving from a local cache is younger than one registration');
  });
});
