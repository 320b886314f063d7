import { isInterfaceType, isObjectType, type GraphQLSchema } from 'graphql';
import type { Config } from '../config/index.js';

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
      mismatches.push(`${where}: the origin schema has no type ${typeName}`);
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
      if (!Object.hasOwn(known, field)) mismatches.push(`${where}: type ${typeName} has no field ${field}`);
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
  return mismatches;
}

const INTROSPECTION_FIELDS = new Set(['__schema', '__type']);
