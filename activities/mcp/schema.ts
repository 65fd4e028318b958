import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ErrorObject, Options, ValidateFunction } from 'ajv';
import { RE2JS } from 're2js';
import { z } from 'zod';

// An MCP tool's arguments are described by the JSON Schema its server lists. They are checked with
// Ajv (the validator the MCP SDK itself uses) before anything runs, and the outcome is reported as
// zod issues, so the registry treats them like any defineTool input: a bad argument is an error
// result the model reads, naming the field. The schema comes from a server and the input from a
// model, so neither may hang or crash the worker: patterns run on RE2 (linear time), and a check
// that throws is an issue, not an exception.

// Draft-07 when the schema says so; otherwise 2020-12, the MCP spec's default dialect since 2025-11-25.
const DRAFT_07 = /json-schema\.org\/draft-0[4-7]\/schema/;

/** RE2 for `pattern` and `patternProperties`; a pattern RE2 cannot run (a lookahead) is left to the server to check. */
const re2: Options['code'] = {
  regExp: Object.assign(
    (pattern: string): { test: (s: string) => boolean } => {
      try {
        const re = RE2JS.compile(pattern);
        return { test: (s) => re.test(s) };
      } catch {
        return { test: () => true };
      }
    },
    { code: 'RE2JS' },
  ),
};

/** Compiles a server's schema; throws one line if it cannot be used. */
export function compileInputSchema(schema: Record<string, unknown>): ValidateFunction {
  // One Ajv per schema: servers may reuse an $id for different schemas, and a re-listed tool's
  // old schema is freed with its tool. strict: false, because servers write keywords Ajv does not know.
  const options: Options = { strict: false, allErrors: true, validateSchema: false, code: re2 };
  const ajv = DRAFT_07.test(String(schema.$schema ?? '')) ? new Ajv(options) : new Ajv2020(options);
  addFormats(ajv);
  try {
    return ajv.compile(schema);
  } catch (err) {
    throw new Error(`its input schema cannot be used: ${(err as Error).message.split('\n')[0]}`);
  }
}

const pathOf = (e: ErrorObject): string[] => {
  const at = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const p = e.params as { missingProperty?: string; additionalProperty?: string };
  const named = p.missingProperty ?? p.additionalProperty;
  return named ? [...at, named] : at;
};

const messageOf = (e: ErrorObject): string =>
  e.keyword === 'required'
    ? 'required'
    : e.keyword === 'additionalProperties'
      ? 'not allowed'
      : (e.message ?? 'invalid');

/** A zod schema that accepts exactly what `schema` accepts, with Ajv's findings as its issues. */
export function inputFromJsonSchema(schema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
  const validate = compileInputSchema(schema);
  return z.custom<Record<string, unknown>>().superRefine((value, ctx) => {
    let valid: boolean;
    try {
      valid = validate(value) as boolean;
    } catch (err) {
      // A schema that refers to itself forever, say: the arguments cannot be checked, so nothing runs.
      ctx.addIssue({ code: 'custom', message: `the server's schema cannot check them: ${(err as Error).message}` });
      return;
    }
    if (valid) return;
    for (const e of validate.errors ?? []) ctx.addIssue({ code: 'custom', path: pathOf(e), message: messageOf(e) });
  });
}
