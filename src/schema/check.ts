import { getNamedType, getNullableType, isAbstractType, isInterfaceType, isListType, isObjectType, type GraphQLSchema } from 'graphql';
import { suggestionList } from 'graphql/jsutils/suggestionList.js';
import type { Config } from '../config/index.js';
import { narrowingArgument } from '../invalidation/index.js';

/**
 * Names in the configuration that the origin schema does not have. A misspelt type in a rule is not
 * an error (the origin may be about to gain it) but it silently matches nothing, so it is worth a
 * warning each time a schema is loaded.
 */
export function configSchemaMismatches(config: Config, schema: GraphQLSchema): string[] {
  const mismatches: string[] = [];
  const checkType = (where: string, typeName: string, fields: readonly string[]): void => {
    const type = schema.getType(typeName);
    if (!type) {
      mismatches.push(`${where}: the origin schema has no type ${typeName}${suggestion(typeName, Object.keys(schema.getTypeMap()).filter((name) => !name.startsWith('__')))}`);
      return;
    }
    if (fields.length === 0) return;
    if (!isObjectType(type) && !isInterfaceType(type)) {
      mismatches.push(`${where}: ${typeName} has no fields (it is not an object or interface type)`);
      return;
    }
    const known = type.getFields();
    const isQueryRoot = type === schema.getQueryType();
    for (const field of fields) {
      // A rule may name introspection to cache it (README, HIT, MISS, PASS); it is no field of Query's own.
      if (isQueryRoot && INTROSPECTION_FIELDS.has(field)) continue;
      // On an interface, a field its types have matches there (README, rules[].types), though it lacks it itself.
      const implemented = isInterfaceType(type) && schema.getPossibleTypes(type).some((possible) => Object.hasOwn(possible.getFields(), field));
      if (!Object.hasOwn(known, field) && !implemented) mismatches.push(`${where}: type ${typeName} has no field ${field}${suggestion(field, Object.keys(known))}`);
    }
  };
  config.rules.forEach((rule, index) => {
    if (Array.isArray(rule.types)) {
      for (const typeName of rule.types) checkType(`rules[${index}].types`, typeName, []);
    } else {
      for (const [typeName, fields] of Object.entries(rule.types)) checkType(`rules[${index}].types.${typeName}`, typeName, fields);
    }
  });
  for (const [typeName, fields] of Object.entries(config.keyFields.types)) {
    checkType(`keyFields.types.${typeName}`, typeName, fields);
  }
  for (const [argument, field] of Object.entries(config.listArguments.fields)) {
    const mismatch = listArgumentMismatch(schema, argument, field);
    if (mismatch) mismatches.push(`listArguments.fields.${argument}: ${mismatch}`);
  }
  return mismatches;
}

/**
 * Those of `mismatches` (as configSchemaMismatches words them) in rules that keep answers in a
 * scope or out of the cache (`maxAge: 0`). Such a rule naming what the schema lacks matches nothing
 * of it, and a broader rule (`[Query]`, PUBLIC) may then cache, for everyone, the answers it was
 * written to keep per user or uncached: a typo (`Stok` for `Stock`) did just that in a new-user
 * run. The name may also be one the origin is about to gain, so it is not refused.
 */
export function guardingRuleMismatches(config: Config, mismatches: readonly string[]): string[] {
  const guarding = config.rules.flatMap((rule, index) => ((rule.scope !== undefined && rule.scope !== 'PUBLIC') || rule.maxAge === 0 ? [`rules[${index}].`] : []));
  return mismatches.filter((mismatch) => guarding.some((prefix) => mismatch.startsWith(prefix)));
}

/**
 * Why a `listArguments.fields` mapping (`Query.usersByTeam.team: User.teamId`, or `null` for an
 * argument that must never narrow) names what is not there: the list field, its argument or the
 * object field is missing, or the argument could never equal the field's value (listArguments.ts
 * says which pairs compare).
 */
function listArgumentMismatch(schema: GraphQLSchema, argumentPath: string, fieldPath: string | null): string | undefined {
  const [parentName, listName, argumentName] = argumentPath.split('.') as [string, string, string];
  const parent = schema.getType(parentName);
  if (!isObjectType(parent)) return `the origin schema has no object type ${parentName}`;
  const list = parent.getFields()[listName];
  const listType = list && getNullableType(list.type);
  if (!list || !isListType(listType)) return `type ${parentName} has no list field ${listName}`;
  const argument = list.args.find((candidate) => candidate.name === argumentName);
  if (!argument) return `field ${parentName}.${listName} has no argument ${argumentName}`;
  if (fieldPath === null) return undefined;
  const [typeName, fieldName] = fieldPath.split('.') as [string, string];
  const type = schema.getType(typeName);
  const held = getNamedType(listType);
  if (!isObjectType(type) || !(type === held || (isAbstractType(held) && schema.isSubType(held, type)))) {
    return `${parentName}.${listName} cannot hold objects of type ${typeName}`;
  }
  if (!Object.hasOwn(type.getFields(), fieldName)) return `type ${typeName} has no field ${fieldName}`;
  if (!narrowingArgument(argument, type, fieldName)) return `argument ${argumentName} can never equal ${typeName}.${fieldName} (their types differ), so it narrows nothing`;
  return undefined;
}

const INTROSPECTION_FIELDS = new Set(['__schema', '__type']);

/** graphql-js's own "Did you mean" pick: the closest of `candidates` by edit distance, if any is close. */
function suggestion(name: string, candidates: readonly string[]): string {
  const [closest] = suggestionList(name, candidates);
  return closest === undefined ? '' : `; did you mean ${closest}?`;
}
