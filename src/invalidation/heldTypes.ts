import {
  getNamedType,
  getNullableType,
  isAbstractType,
  isCompositeType,
  isListType,
  isObjectType,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { getOrInsertComputed } from '../util/index.js';
import { entityKeyField, type KeyFields } from './keyFields.js';
import { invalidationTag } from './tags.js';

/**
 * What a place of a type in an answer could hold (README, Invalidation after mutations: a field
 * that came back `null` or empty is tagged with the types it could have held): its possible object
 * types and, below each one without a key field, what that one's fields could hold in turn (a
 * connection's edges, their nodes, its page info), down to entity types. An entity type is
 * included but not walked: what it holds is named by its own tags once it is there. A root
 * operation type is not walked either: a field holding one (a Relay payload's `query: Query`)
 * re-enters the whole schema, and is `null` only with `errors`, in an answer that is not stored.
 *
 * Types that hold each other (a cycle of key-less types) hold the same types, so they share one
 * `HeldTypes`: a strongly connected component of the graph whose edges go from a type to what a
 * place of it could hold directly. A component refers to the components it reaches instead of
 * copying what they hold, so the whole schema's costs memory and time in proportion to its types
 * and fields, however they connect; `HeldTypesWalk` goes through what one holds.
 */
export interface HeldTypes {
  /** The object types of the component (none for an interface or union alone in it). */
  readonly types: readonly GraphQLObjectType[];
  /** Their `type` tags, and their `list` tags, worked out once. */
  readonly typeTags: readonly string[];
  readonly listTags: readonly string[];
  /**
   * A list field inside the component leads back into it, so everything it holds can be held
   * below a list (a tree of key-less nodes).
   */
  readonly listedWithin: boolean;
  /** The components one field (or possible type) away; `list` when one such field is a list. */
  readonly next: ReadonlyArray<{ readonly held: HeldTypes; readonly list: boolean }>;
  /** The entity types it could hold, worked out once when first asked. */
  entities(): readonly GraphQLObjectType[];
  /**
   * The entity types it could hold below a list, worked out once when first asked: of a Relay
   * connection, its edges' nodes, not its other fields' (an `owner`).
   */
  listedEntities(): ListedEntities;
  /** Whether it could hold an entity of one of `names` (a connection's `listedEntities().names`); remembered per set. */
  holdsAnyOf(names: ReadonlySet<string>): boolean;
}

export interface ListedEntities {
  readonly types: readonly GraphQLObjectType[];
  readonly names: ReadonlySet<string>;
}

/** Worked out once per schema and `keyFields`, for every type at once: a walk of the schema, not of an answer. */
export function heldTypes(schema: GraphQLSchema, keyFields: KeyFields, type: GraphQLNamedType): HeldTypes {
  const byKeyFields = getOrInsertComputed(heldBySchema, schema, () => new WeakMap<KeyFields, ReadonlyMap<string, HeldTypes>>());
  return getOrInsertComputed(byKeyFields, keyFields, () => componentsOf(schema, keyFields)).get(type.name) ?? NOTHING;
}

const heldBySchema = new WeakMap<GraphQLSchema, WeakMap<KeyFields, ReadonlyMap<string, HeldTypes>>>();

/**
 * Goes through what vacancies hold, for one answer: `report` gets each component reached once, and
 * once more if it is later reached below a list when it was not before, so a vacancy of types met
 * already costs a lookup. A type is below a list when a list field is on the way to it from the
 * vacancy, or the vacancy itself is in a list.
 */
export class HeldTypesWalk {
  /** Components reported, and whether below a list. */
  private readonly reported = new Map<HeldTypes, boolean>();

  constructor(private readonly report: (held: HeldTypes, listed: boolean) => boolean) {}

  /** False when `report` ended the walk. */
  walk(held: HeldTypes, list: boolean): boolean {
    // A stack, not recursion: a chain of thousands of types would overflow the call stack.
    const pending: Array<[HeldTypes, boolean]> = [[held, list]];
    for (let step = pending.pop(); step; step = pending.pop()) {
      const [component, below] = step;
      const listed = below || component.listedWithin;
      const before = this.reported.get(component);
      if (before === true || (before === false && !listed)) continue;
      this.reported.set(component, listed);
      if (!this.report(component, listed)) return false;
      for (const next of component.next) pending.push([next.held, listed || next.list]);
    }
    return true;
  }
}

/** The object types of a place of `type`: itself, or an interface's or union's possible types. */
export function possibleObjectTypes(schema: GraphQLSchema, type: GraphQLNamedType): readonly GraphQLObjectType[] {
  if (isObjectType(type)) return [type];
  return isAbstractType(type) ? schema.getPossibleTypes(type) : [];
}

/** What a leaf type holds, or a type the schema does not know. */
const NOTHING: HeldTypes = {
  types: [],
  typeTags: [],
  listTags: [],
  listedWithin: false,
  next: [],
  entities: () => [],
  listedEntities: () => ({ types: [], names: new Set() }),
  holdsAnyOf: () => false,
};

/** One edge of the graph: to the index of a composite type, and whether through a list field. */
interface Edge {
  to: number;
  list: boolean;
}

/**
 * The `HeldTypes` of every composite type of the schema, by name: Tarjan's strongly connected
 * components, kept iterative. It closes a component only once every component it reaches is
 * closed, so each is built from finished ones.
 */
function componentsOf(schema: GraphQLSchema, keyFields: KeyFields): ReadonlyMap<string, HeldTypes> {
  const types = Object.values(schema.getTypeMap()).filter(isCompositeType);
  const numbers = new Map(types.map((type, number) => [type.name, number]));
  const roots = new Set<GraphQLNamedType | null | undefined>([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]);
  const edges = types.map((type): Edge[] => {
    if (isAbstractType(type)) return schema.getPossibleTypes(type).map((possible) => ({ to: numbers.get(possible.name)!, list: false }));
    if (roots.has(type) || entityKeyField(type, keyFields) !== undefined) return [];
    return Object.values(type.getFields()).flatMap((field) => {
      const to = numbers.get(getNamedType(field.type).name);
      return to === undefined ? [] : [{ to, list: isListType(getNullableType(field.type)) }];
    });
  });
  const component = new Array<HeldTypes | undefined>(types.length).fill(undefined);
  /** Tarjan's numbering: the order a type is entered in, and the lowest one its descendants reach that is still open. */
  const order = new Int32Array(types.length).fill(-1);
  const lowest = new Int32Array(types.length);
  let entered = 0;
  /** Entered types whose component is not closed yet, and the path of types being walked, each with its next edge. */
  const open: number[] = [];
  const path: Array<[number, number]> = [];
  const enter = (node: number): void => {
    order[node] = lowest[node] = entered++;
    open.push(node);
    path.push([node, 0]);
  };
  for (let start = 0; start < types.length; start++) {
    if (order[start] === -1) enter(start);
    while (path.length > 0) {
      const top = path[path.length - 1]!;
      const [node, edge] = top;
      if (edge < edges[node]!.length) {
        top[1]++;
        const { to } = edges[node]![edge]!;
        if (order[to] === -1) enter(to);
        else if (component[to] === undefined) lowest[node] = Math.min(lowest[node]!, order[to]!);
        continue;
      }
      path.pop();
      const parent = path[path.length - 1];
      if (parent) lowest[parent[0]] = Math.min(lowest[parent[0]]!, lowest[node]!);
      if (lowest[node] !== order[node]) continue;
      const members = open.splice(open.lastIndexOf(node));
      const held = newComponent(members.map((number) => types[number]!), members.map((number) => edges[number]!), component, keyFields);
      for (const member of members) component[member] = held;
    }
  }
  return new Map(types.map((type, number) => [type.name, component[number]!]));
}

/** A component closing: `component` has those it reaches, not yet its own `members`, whose edges are `edges`. */
function newComponent(
  members: readonly GraphQLNamedType[],
  edges: ReadonlyArray<readonly Edge[]>,
  component: ReadonlyArray<HeldTypes | undefined>,
  keyFields: KeyFields,
): HeldTypes {
  const types = members.filter(isObjectType);
  let listedWithin = false;
  const next = new Map<HeldTypes, boolean>();
  for (const { to, list } of edges.flat()) {
    const held = component[to];
    // Not closed yet: a member of this very component.
    if (held === undefined) listedWithin ||= list;
    else next.set(held, next.get(held) === true || list);
  }
  let entities: readonly GraphQLObjectType[] | undefined;
  let listed: ListedEntities | undefined;
  const holds = new WeakMap<ReadonlySet<string>, boolean>();
  const self: HeldTypes = {
    types,
    typeTags: types.map((type) => invalidationTag.type(type.name)),
    listTags: types.map((type) => invalidationTag.list(type.name)),
    listedWithin,
    next: [...next].map(([held, list]) => ({ held, list })),
    entities: () => (entities ??= entitiesHeld(self, keyFields, false)),
    listedEntities: () => (listed ??= listedEntitiesOf(self, keyFields)),
    holdsAnyOf: (names) => getOrInsertComputed(holds, names, () => self.entities().some((entity) => names.has(entity.name))),
  };
  return self;
}

/** The entity types `held` could hold anywhere, or only below a list. */
function entitiesHeld(held: HeldTypes, keyFields: KeyFields, listedOnly: boolean): readonly GraphQLObjectType[] {
  const found = new Map<string, GraphQLObjectType>();
  new HeldTypesWalk((component, inList) => {
    if (inList || !listedOnly) for (const type of component.types) if (entityKeyField(type, keyFields) !== undefined) found.set(type.name, type);
    return true;
  }).walk(held, !listedOnly);
  return [...found.values()];
}

function listedEntitiesOf(held: HeldTypes, keyFields: KeyFields): ListedEntities {
  const types = entitiesHeld(held, keyFields, true);
  return { types, names: new Set(types.map((type) => type.name)) };
}
