import {
  Kind,
  isAbstractType,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { collectFields, fragmentsOf } from '../graphql/index.js';
import type { PreparedOperation } from './preparedOperation.js';

/**
 * The response shape an operation asks for, worked out lazily while a response is read: under each
 * response key, the fields that produce it, merged across fragments as GraphQL's CollectFields
 * merges them, and below those the plan for the key's value. `@include` and `@skip` are not
 * evaluated (their variables are not at hand): a response holds a key exactly when its field was
 * included, so readers go by the keys present.
 *
 * Work is remembered per plan node, so reading a list of a thousand objects collects the fields of
 * their selection once. A node is what it merges, the same selection sets wherever in the answer it
 * is reached: places that merge the same ones share one node (PlanNodes), so a fragment spread
 * under many aliases, or at every level of a deep answer, is collected once, not once per path
 * (README, Bad input).
 */
export class SelectionPlan {
  private readonly fieldsByFilter = new Map<string, ReadonlyMap<string, readonly FieldNode[]>>();
  private readonly children = new Map<string, SelectionPlan>();

  constructor(
    private readonly selectionSets: readonly SelectionSetNode[],
    private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>,
    private readonly nodes: PlanNodes = new PlanNodes(),
  ) {}

  /** The fields under each response key, in response order, counting the fragments `filter` admits. */
  fields(filter: FragmentFilter = everyFragment): ReadonlyMap<string, readonly FieldNode[]> {
    let fields = this.fieldsByFilter.get(filter.key);
    if (!fields) {
      fields = fieldsByResponseKey(this.selectionSets, this.fragments, filter);
      this.fieldsByFilter.set(filter.key, fields);
    }
    return fields;
  }

  /** The plan for the value under `responseKey`: the merged selection sets of its fields. */
  child(responseKey: string, filter: FragmentFilter = everyFragment): SelectionPlan {
    const memoKey = `${filter.key}\u0000${responseKey}`;
    let child = this.children.get(memoKey);
    if (!child) {
      const selectionSets = (this.fields(filter).get(responseKey) ?? []).flatMap((field) =>
        field.selectionSet ? [field.selectionSet] : [],
      );
      child = this.nodes.of(selectionSets, (merged) => new SelectionPlan(merged, this.fragments, this.nodes));
      this.children.set(memoKey, child);
    }
    return child;
  }
}

/** The nodes of one operation's plan by the selection sets each merges (SelectionPlan). */
class PlanNodes {
  private readonly ids = new WeakMap<SelectionSetNode, number>();
  private nextId = 0;
  private readonly byMerged = new Map<string, SelectionPlan>();

  of(selectionSets: readonly SelectionSetNode[], create: (selectionSets: readonly SelectionSetNode[]) => SelectionPlan): SelectionPlan {
    const key = selectionSets.map((selectionSet) => this.idOf(selectionSet)).join(',');
    let node = this.byMerged.get(key);
    if (!node) {
      node = create(selectionSets);
      this.byMerged.set(key, node);
    }
    return node;
  }

  private idOf(selectionSet: SelectionSetNode): number {
    let id = this.ids.get(selectionSet);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(selectionSet, id);
    }
    return id;
  }
}

/**
 * Which fragments count when fields are collected: those whose type condition holds for one
 * concrete type (what an object of that type received), or all of them (every key the response can
 * hold at that place, whatever the type).
 */
export interface FragmentFilter {
  /** Tells filters apart in memo tables. */
  readonly key: string;
  admits(typeCondition: string): boolean;
}

export const everyFragment: FragmentFilter = { key: '*', admits: () => true };

/** The fragments that apply to an object whose `__typename` is `type`. */
export function fragmentsFor(schema: GraphQLSchema, type: GraphQLObjectType): FragmentFilter {
  return {
    key: type.name,
    admits: (typeCondition) => {
      if (typeCondition === type.name) return true;
      const condition = schema.getType(typeCondition);
      return condition !== undefined && isAbstractType(condition) && schema.isSubType(condition, type);
    },
  };
}

export interface OperationPlan {
  operation: OperationDefinitionNode;
  plan: SelectionPlan;
}

/**
 * The plan of the prepared operation, remembered with it: a prepared operation belongs to one
 * schema, and which fragments apply to a type depends on the schema.
 */
export function operationPlan(prepared: PreparedOperation): OperationPlan | undefined {
  let remembered = plansByOperation.get(prepared);
  if (remembered === undefined) {
    remembered = planOperation(prepared.document) ?? null;
    plansByOperation.set(prepared, remembered);
  }
  return remembered ?? undefined;
}

const plansByOperation = new WeakMap<PreparedOperation, OperationPlan | null>();

function planOperation(document: DocumentNode): OperationPlan | undefined {
  const operation = document.definitions.find(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION,
  );
  if (!operation) return undefined;
  return { operation, plan: new SelectionPlan([operation.selectionSet], fragmentsOf(document)) };
}

function fieldsByResponseKey(
  selectionSets: readonly SelectionSetNode[],
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  filter: FragmentFilter,
): Map<string, FieldNode[]> {
  const fields = new Map<string, FieldNode[]>();
  const admits = (typeCondition: string | undefined): boolean => typeCondition === undefined || filter.admits(typeCondition);
  for (const field of collectFields(selectionSets, fragments, { admits })) {
    const responseKey = (field.alias ?? field.name).value;
    const sameKey = fields.get(responseKey);
    if (sameKey) sameKey.push(field);
    else fields.set(responseKey, [field]);
  }
  return fields;
}
