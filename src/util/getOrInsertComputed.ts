/** What `getOrInsertComputed` needs of a Map or a WeakMap. */
interface KeyedMap<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): unknown;
}

/**
 * The map's value for `key`, computed and inserted first when it has none: what TC39's
 * `Map.prototype.getOrInsertComputed` does (not in Node 20), for values that are never undefined.
 */
export function getOrInsertComputed<K, V>(map: KeyedMap<K, V>, key: K, compute: (key: K) => V): V {
  const found = map.get(key);
  if (found !== undefined) return found;
  const computed = compute(key);
  map.set(key, computed);
  return computed;
}
