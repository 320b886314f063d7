import { afterEach, describe, expect, it } from 'vitest';
import { startFileConfiguredStack, RELOADED, REFUSED, type FileConfiguredStack } from '../support/fileConfiguredStack.js';

/** The configuration view follows the watched file: the last reload's time and outcome, then the new rules. */

function configFile(maxAge: number, extra = ''): string {
  return `origin:
  url: {{ORIGIN_URL}}
schema:
  file: {{SCHEMA_FILE}}
purge:
  tokens: [a-token-the-page-must-not-show]
rules:
  - description: the todo list
    types: { Query: [todos] }
    maxAge: ${maxAge}
${extra}`;
}

let stack: FileConfiguredStack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function configView(): Promise<{ config: { rules: Array<{ maxAge: number }>; purge: unknown }; lastReload: Record<string, unknown> }> {
  return (await fetch(`http://127.0.0.1:${stack!.sidecar.adminPort}/api/config`)).json() as never;
}

describe('dashboard configuration view', () => {
  it('shows the last reload, applied or refused, and the configuration in effect', async () => {
    stack = await startFileConfiguredStack(configFile(60));
    expect((await configView()).lastReload).toEqual({});

    await stack.writeConfig(configFile(30));
    await stack.log.waitFor(RELOADED, 1);
    const applied = await configView();
    expect(applied.lastReload).toMatchObject({ result: 'ok' });
    expect(Date.parse(applied.lastReload.at as string)).not.toBeNaN();
    expect(applied.config.rules[0]!.maxAge).toBe(30);
    expect(applied.config.purge).toEqual({ tokens: ['[redacted]'], header: 'svc-purge-token' });

    await stack.writeConfig(configFile(10, 'bogus: 1\n'));
    await stack.log.waitFor(REFUSED, 1);
    const refused = await configView();
    expect(refused.lastReload).toMatchObject({ result: 'refused' });
    expect(refused.lastReload.error).toContain('bogus');
    expect(refused.config.rules[0]!.maxAge).toBe(30);
  });
});
