import { describe, expect, it } from 'vitest';
import { invalidationTag as tag, MAX_TAG_CHARACTERS } from '../../src/invalidation/tags.js';

describe('invalidationTag', () => {
  it('spells a tag longer than MAX_TAG_CHARACTERS by its kind and a hash of the whole, the same each time', () => {
    const key = 'k'.repeat(20_000);
    expect(tag.entity('Product', key)).toMatch(/^e:#[\w-]{43}$/);
    expect(tag.entity('Product', key)).toBe(tag.entity('Product', key));
    expect(tag.entity('Product', key)).not.toBe(tag.entity('Product', `${key}!`));
    expect(tag.operation('O'.repeat(MAX_TAG_CHARACTERS))).toMatch(/^o:#/);
  });

  it('spells a tag of MAX_TAG_CHARACTERS or fewer as it is', () => {
    const key = 'k'.repeat(MAX_TAG_CHARACTERS - 'e:Product:'.length);
    expect(tag.entity('Product', key)).toBe(`e:Product:${key}`);
    expect(tag.type('Todo')).toBe('t:Todo');
  });
});
