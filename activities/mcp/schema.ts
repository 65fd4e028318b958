import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { z } from 'zod';

// An MCP tool's arguments are described by the JSON Schema its server lists. They are checked with
// Ajv (the validator the MCP SDK itself uses) before anything runs, and the outcome is reported as
// zod issues, so the registry treats them like any defineTool input: a bad argument is an error
// result the model reads, naming the field.

const DRAFT_2020 = /json-schema\.org\/draft\/2020-12/;

const make = <A extends Ajv>(A: new (o: object) => A): A => {
  // strict: false, because servers write schemas with keywords Ajv does not know (title, examples).
  const ajv = new A({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  return ajv;
};
let draft7: Ajv | undefined;
let draft2020: Ajv | undefined;

/** Compiles a server's schema; throws one line if it cannot be used. */
export function compileInputSchema(schema: Record<string, unknown>): ValidateFunction {
  const ajv = DRAFT_2020.test(String(schema.$schema ?? '')) ? (draft2020 ??= make(Ajv2020)) : (draft7 ??= make(Ajv));
  // An $id would be cached by Ajv across servers: two servers may use the same one for different schemas.
  const { $id: _id, ...rest } = schema;
  try {
    return ajv.compile(rest);
  } catch (err) {
    throw new Error(`its input schema cannot be used: ${(err as Error).message.split('\n')[0]}`);
  }
}

const pathOf = (e: ErrorObject): string[] => {
  const at = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const missing = (e.params as { missingProperty?: string }).missingProperty;
  return missing ? [...at, missing] : at;
};

/** A zod schema that accepts exactly what `schema` accepts, with Ajv's findings as its issues. */
export function inputFromJsonSchema(schema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
  const validate = compileInputSchema(schema);
  return z.custom<Record<string, unknown>>().superRefine((value, ctx) => {
    if (validate(value)) return;
    for (const e of validate.errors ?? [])
      ctx.addIssue({
        code: 'custom',
        path: pathOf(e),
        message: e.keyword === 'required' ? 'required' : (e.message ?? 'invalid'),
      });
  });
}
