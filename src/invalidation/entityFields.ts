import {
  Kind,
  OperationTypeNode,
  getNamedType,
  isAbstractType,
  isCompositeType,
  isInterfaceType,
  isObjectType,
  print,
  validateSchema,
  visit,
  type DirectiveNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type InlineFragmentNode,
  type NamedTypeNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';
import { FragmentMemo, fragmentsOf, validationErrors } from '../graphql/index.js';
import type { KeyFields } from './keyFields.js';
import { removeMembers, type MemberPlan } from './jsonMembers.js';
import { entityKeyField } from './keyFields.js';
import type { PreparedOperation } from './preparedOperation.js';
import type { ListArgumentIndex } from './listArguments.js';
import { operationPlan, type SelectionPlan } from './selectionPlan.js';

export type { PreparedOperation } from './preparedOperation.js';

/**
 * Entity identity (docs/graphql-caching.md, Invalidation): before a query or mutation goes to the
 * origin, svc-cache adds what it needs to name every object in the response, `__typename` where the
 * schema alone cannot tell the type and each entity's key field, and after the response comes back
 * it takes exactly those additions out again.
 *
 * Added fields go under response keys starting with a prefix that no response key of the client's
 * document starts with (`_svc_`, else `_svc1_`, `_svc2_`, ...), so they can neither collide with
 * the client's fields nor be mistaken for them. A key field gets one alias per field name and
 * declared type across the document (`_svc_id`, then `_svc_id_2` for an `id` of another type), so
 * two additions that GraphQL merges always agree and the rewritten document stays valid.
 *
 * What a client can still tell apart in an answer to a rewritten operation: error `locations`
 * point into the rewritten text the origin received, not the client's; and should the origin fail
 * to resolve an added key field, the error names the added response key and, the key being
 * non-null, its object may come back `null`.
 */

/**
 * Prepares one operation (a document holding it and the fragments it uses) for the origin.
 * Documents that do not validate against the schema are left as they are, so the origin's errors
 * about them refer to the client's own text. With `lists` (what stored answers are tagged with and,
 * for a mutation under `listArguments.mode: match`, what its answer must tell of each object; see
 * listArguments.ts), a mutation also gets the fields that name the lists its objects belong to.
 * Remembered per document, schema, `keyFields` and `lists`.
 */
export function prepareOperation(schema: GraphQLSchema, document: DocumentNode, keyFields: KeyFields, lists?: ListArgumentIndex): PreparedOperation {
  const remembered = preparedByDocument.get(document);
  if (remembered?.schema === schema && remembered.prepared.keyFields === keyFields && remembered.prepared.lists === lists) return remembered.prepared;
  const prepared = prepare(schema, document, keyFields, lists);
  preparedByDocument.set(document, { schema, prepared });
  return prepared;
}

/**
 * The origin's response body as it would have been for the client's own operation: the members
 * svc-cache added are cut out of `data`, every other byte (including `errors` and `extensions`)
 * left as the origin wrote it. The same Buffer when the operation was not rewritten or nothing
 * added is present (an error without data, a body that is not JSON).
 */
export function stripAddedFields(prepared: PreparedOperation, resultBody: Buffer): Buffer {
  if (!prepared.rewritten) return resultBody;
  let added = addedMembersByOperation.get(prepared);
  if (!added) {
    const operation = operationPlan(prepared);
    if (!operation) return resultBody;
    const data = new AddedMembers(operation.plan, prepared.addedKeyPrefix, new Map());
    added = { removes: () => false, within: (key) => (key === 'data' ? data : undefined) };
    addedMembersByOperation.set(prepared, added);
  }
  return removeMembers(resultBody, added);
}

/** What to cut from a whole response body, per prepared operation. */
const addedMembersByOperation = new WeakMap<PreparedOperation, MemberPlan>();

const preparedByDocument = new WeakMap<DocumentNode, { schema: GraphQLSchema; prepared: PreparedOperation }>();

/**
 * Validation runs only once the rewrite added something: a document that needs nothing added is
 * sent unchanged whether it validates or not, and full validation (every rule of the spec) was the
 * largest single cost of a MISS on a document not seen before. The rewriter copes with documents
 * that do not validate (unknown fields and types are left alone, fragment cycles end in FragmentMemo).
 */
function prepare(schema: GraphQLSchema, document: DocumentNode, keyFields: KeyFields, lists: ListArgumentIndex | undefined): PreparedOperation {
  const addedKeyPrefix = reservedPrefix(document);
  const unchanged = (): PreparedOperation => ({
    document,
    // Sent only when rewritten: printed on demand, not on every MISS of a new document.
    get query() {
      return print(document);
    },
    rewritten: false,
    addedKeyPrefix,
    keyFields,
    lists,
  });
  // validateSchema remembers its answer on the schema, so this costs a lookup.
  if (validateSchema(schema).length > 0) return unchanged();
  const mutation = document.definitions.some((definition) => definition.kind === Kind.OPERATION_DEFINITION && definition.operation === OperationTypeNode.MUTATION);
  const listValues = mutation && lists?.matching ? lists : undefined;
  const rewriter = new EntityFieldAdder(schema, document, keyFields, addedKeyPrefix, listValues);
  const rewritten = rewriter.rewrite();
  if (!rewriter.addedAny || validationErrors(schema, document).length > 0) return unchanged();
  return { document: rewritten, query: print(rewritten), rewritten: true, addedKeyPrefix, keyFields, lists };
}

/**
 * The first of `_svc_`, `_svc1_`, `_svc2_`, … that no response key of the document starts with. A
 * key can start with one of them at most (the digits after `_svc` up to the next `_`), so each key
 * rules out one and the first left is found in one pass over the keys (README, Bad input: a query
 * of `_svc_ _svc1_ _svc2_ …` cost quadratic time when every key was tried against every prefix).
 */
function reservedPrefix(document: DocumentNode): string {
  const taken = new Set<number>();
  visit(document, {
    Field(field) {
      const attempt = prefixAttempt((field.alias ?? field.name).value);
      if (attempt !== undefined) taken.add(attempt);
    },
  });
  let attempt = 0;
  while (taken.has(attempt)) attempt += 1;
  return attempt === 0 ? '_svc_' : `_svc${attempt}_`;
}

/** Which of reservedPrefix's prefixes `key` starts with: 0 for `_svc_`, n for `_svc<n>_` (n written without leading zeros). */
function prefixAttempt(key: string): number | undefined {
  if (key.startsWith('_svc_')) return 0;
  const digits = /^_svc([1-9][0-9]*)_/.exec(key)?.[1];
  return digits === undefined ? undefined : Number(digits);
}

/**
 * Adds, to the selection set of every field of an object, interface or union type, what naming its
 * objects needs and the client did not already ask for unconditionally:
 * - `__typename` when the type is an interface or union (an object type names itself);
 * - for each possible type with a key field, that field, and with `listValues` the fields that name
 *   the lists its objects belong to (an object-valued one with its sub-fields, always added): on
 *   the field's own type when it has it, otherwise in an inline fragment on the possible type.
 * The operation's root selection gains nothing: root objects are not entities. Fields the schema
 * does not know (introspection included) are left alone.
 */
class EntityFieldAdder {
  addedAny = false;
  private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  private readonly typenameAlias: string;
  /** Alias of each added key field, by field name and declared type. */
  private readonly keyAliases = new Map<string, string>();
  private readonly usedAliases = new Set<string>();
  /** Whether each fragment selects a field for a type, by type and field name (see `selects`). */
  private readonly selectsByFragment = new Map<string, FragmentMemo<boolean>>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly document: DocumentNode,
    private readonly keyFields: KeyFields,
    private readonly prefix: string,
    private readonly listValues: ListArgumentIndex | undefined,
  ) {
    this.fragments = fragmentsOf(document);
    this.typenameAlias = `${prefix}typename`;
    this.usedAliases.add(this.typenameAlias);
  }

  rewrite(): DocumentNode {
    const definitions = this.document.definitions.map((definition) => {
      if (definition.kind === Kind.OPERATION_DEFINITION) {
        const root = this.schema.getRootType(definition.operation);
        return root ? { ...definition, selectionSet: this.rewriteInside(definition.selectionSet, root) } : definition;
      }
      if (definition.kind === Kind.FRAGMENT_DEFINITION) {
        const type = this.schema.getType(definition.typeCondition.name.value);
        if (!isCompositeType(type)) return definition;
        return { ...definition, selectionSet: this.rewriteInside(definition.selectionSet, type) };
      }
      return definition;
    });
    return { ...this.document, definitions };
  }

  /** Rewrites the fields within the set; the set itself gains nothing here (its field decides). */
  private rewriteInside(selectionSet: SelectionSetNode, type: GraphQLCompositeType): SelectionSetNode {
    const selections = selectionSet.selections.map((selection): SelectionNode => {
      if (selection.kind === Kind.FIELD) return this.rewriteField(selection, type);
      if (selection.kind === Kind.FRAGMENT_SPREAD) return selection;
      const condition = selection.typeCondition ? this.schema.getType(selection.typeCondition.name.value) : type;
      if (!isCompositeType(condition)) return selection;
      return { ...selection, selectionSet: this.rewriteInside(selection.selectionSet, condition) };
    });
    return { ...selectionSet, selections };
  }

  private rewriteField(field: FieldNode, parentType: GraphQLCompositeType): FieldNode {
    if (!field.selectionSet) return field;
    const definition = ownField(parentType, field.name.value);
    const type = definition && getNamedType(definition.type);
    if (!type || !isCompositeType(type)) return field;
    const inner = this.rewriteInside(field.selectionSet, type);
    const additions = this.additions(field.selectionSet, type);
    if (additions.length === 0) return { ...field, selectionSet: inner };
    this.addedAny = true;
    return { ...field, selectionSet: { ...inner, selections: [...inner.selections, ...additions] } };
  }

  private additions(selectionSet: SelectionSetNode, type: GraphQLCompositeType): SelectionNode[] {
    const possibleTypes = isAbstractType(type) ? this.schema.getPossibleTypes(type) : [type];
    /** In order; a field added on `type` itself is built at the end, when every possible type has said what it needs of it. */
    const additions: Array<SelectionNode | string> = [];
    if (isAbstractType(type) && possibleTypes.some((possible) => !this.selects(selectionSet, possible, '__typename'))) {
      additions.push(aliasedField(this.typenameAlias, '__typename'));
    }
    const onType = new Map<string, { type: GraphQLOutputType; subfields: Set<string> | undefined }>();
    for (const possible of possibleTypes) {
      for (const [name, subfields] of this.neededFields(possible)) {
        if (!subfields && this.selects(selectionSet, possible, name)) continue;
        const shared = ownField(type, name);
        if (!shared) {
          const field = aliasedField(this.keyAlias(name, possible.getFields()[name]!.type), name, subfields);
          additions.push(inlineFragment(possible.name, field));
        } else if (onType.has(name)) {
          for (const subfield of subfields ?? []) onType.get(name)!.subfields?.add(subfield);
        } else {
          onType.set(name, { type: shared.type, subfields: subfields && new Set(subfields) });
          additions.push(name);
        }
      }
    }
    return additions.map((addition) => {
      if (typeof addition !== 'string') return addition;
      const { type: fieldType, subfields } = onType.get(addition)!;
      return aliasedField(this.keyAlias(addition, fieldType), addition, subfields && [...subfields]);
    });
  }

  /** The fields an object of the type must come back with, key field first: field name to sub-fields (none for a leaf). */
  private neededFields(possible: GraphQLObjectType): Array<[string, readonly string[] | undefined]> {
    const key = entityKeyField(possible, this.keyFields);
    // A type without a key field needs neither: a mutation names every list of it (responseTags.ts, ReturnedLists).
    if (key === undefined) return [];
    const needed: Array<[string, readonly string[] | undefined]> = [[key, undefined]];
    for (const [name, subfields] of this.listValues?.valueFields(possible) ?? []) if (name !== key) needed.push([name, subfields]);
    return needed;
  }

  /**
   * Whether an object of `concrete` type always receives `fieldName` (under whatever response key,
   * without arguments) from this selection set: selected directly or through fragments that apply
   * to the type, with no `@include`/`@skip` that a variable could turn off. What a fragment gives
   * is worked out once per type and field name, so asking at every selection set stays linear.
   */
  private selects(selectionSet: SelectionSetNode, concrete: GraphQLObjectType, fieldName: string): boolean {
    const memoKey = `${concrete.name}\u0000${fieldName}`;
    let memo = this.selectsByFragment.get(memoKey);
    if (!memo) {
      memo = new FragmentMemo<boolean>(
        this.fragments,
        (fragment, self) =>
          this.appliesTo(fragment.typeCondition, concrete) && this.selectsWith(fragment.selectionSet, concrete, fieldName, self),
        false,
      );
      this.selectsByFragment.set(memoKey, memo);
    }
    return this.selectsWith(selectionSet, concrete, fieldName, memo);
  }

  private selectsWith(
    selectionSet: SelectionSetNode,
    concrete: GraphQLObjectType,
    fieldName: string,
    fragments: FragmentMemo<boolean>,
  ): boolean {
    return selectionSet.selections.some((selection) => {
      if (!alwaysIncluded(selection.directives)) return false;
      if (selection.kind === Kind.FIELD) {
        return selection.name.value === fieldName && (selection.arguments ?? []).length === 0;
      }
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        return (
          this.appliesTo(selection.typeCondition, concrete) &&
          this.selectsWith(selection.selectionSet, concrete, fieldName, fragments)
        );
      }
      return fragments.of(selection.name.value) ?? false;
    });
  }

  private appliesTo(typeCondition: NamedTypeNode | undefined, concrete: GraphQLObjectType): boolean {
    if (!typeCondition || typeCondition.name.value === concrete.name) return true;
    const condition = this.schema.getType(typeCondition.name.value);
    return condition !== undefined && isAbstractType(condition) && this.schema.isSubType(condition, concrete);
  }

  private keyAlias(fieldName: string, type: GraphQLOutputType): string {
    const shape = `${fieldName}: ${String(type)}`;
    let alias = this.keyAliases.get(shape);
    if (alias === undefined) {
      alias = `${this.prefix}${fieldName}`;
      for (let suffix = 2; this.usedAliases.has(alias); suffix++) alias = `${this.prefix}${fieldName}_${suffix}`;
      this.keyAliases.set(shape, alias);
      this.usedAliases.add(alias);
    }
    return alias;
  }
}

/**
 * Strips, from one object of `data` and the objects below it, the members the rewrite added. One
 * per plan node of the operation (`shared`): places of the answer that share a node share what to
 * strip there, so the work and what is kept follow the plan's nodes, not the answer's paths
 * (SelectionPlan; README, Bad input).
 */
class AddedMembers implements MemberPlan {
  private readonly added = new Set<string>();
  /** Response keys whose fields have selections, with the plan below once it was needed. */
  private readonly below = new Map<string, AddedMembers | undefined>();

  constructor(
    private readonly plan: SelectionPlan,
    private readonly prefix: string,
    private readonly shared: Map<SelectionPlan, AddedMembers>,
  ) {
    shared.set(plan, this);
    for (const [responseKey, fields] of plan.fields()) {
      if (responseKey.startsWith(prefix)) this.added.add(responseKey);
      else if (fields.some((field) => field.selectionSet)) this.below.set(responseKey, undefined);
    }
  }

  removes(key: string): boolean {
    return this.added.has(key);
  }

  within(key: string): AddedMembers | undefined {
    if (!this.below.has(key)) return undefined;
    let child = this.below.get(key);
    if (!child) {
      const plan = this.plan.child(key);
      child = this.shared.get(plan) ?? new AddedMembers(plan, this.prefix, this.shared);
      this.below.set(key, child);
    }
    return child;
  }
}

function ownField(type: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined {
  return isObjectType(type) || isInterfaceType(type) ? type.getFields()[name] : undefined;
}

/** False when `@include` or `@skip` could leave the selection out (a variable, or a literal that does). */
function alwaysIncluded(directives: readonly DirectiveNode[] | undefined): boolean {
  return (directives ?? []).every((directive) => {
    const name = directive.name.value;
    if (name !== 'include' && name !== 'skip') return true;
    const condition = directive.arguments?.find((argument) => argument.name.value === 'if')?.value;
    return condition?.kind === Kind.BOOLEAN && condition.value === (name === 'include');
  });
}

function aliasedField(alias: string, name: string, subfields?: readonly string[]): FieldNode {
  const field: FieldNode = { kind: Kind.FIELD, alias: { kind: Kind.NAME, value: alias }, name: { kind: Kind.NAME, value: name } };
  if (!subfields) return field;
  const selections = subfields.map((subfield): FieldNode => ({ kind: Kind.FIELD, name: { kind: Kind.NAME, value: subfield } }));
  return { ...field, selectionSet: { kind: Kind.SELECTION_SET, selections } };
}

function inlineFragment(typeName: string, field: FieldNode): InlineFragmentNode {
  return {
    kind: Kind.INLINE_FRAGMENT,
    typeCondition: { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: typeName } },
    selectionSet: { kind: Kind.SELECTION_SET, selections: [field] },
  };
}
