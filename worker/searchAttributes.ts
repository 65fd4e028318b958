import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

import { SEARCH_ATTRIBUTES } from '../workflows/definitions';

const SEARCH_ATTRIBUTE_NAMES = SEARCH_ATTRIBUTES.map((k) => k.name);

/** Registers the project's Keyword search attributes when the namespace lacks them. */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = SEARCH_ATTRIBUTE_NAMES.filter((name) => !customAttributes?.[name]);
  if (!missing.length) return;
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        missing.map((n) => [n, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
      ),
    });
  } catch (err) {
    throw new Error(
      `search attributes ${missing.join(', ')} are missing in namespace '${namespace}' and could not be added (${(err as Error).message}); ` +
        `add them with: temporal operator search-attribute create --namespace ${namespace} ${missing.map((n) => `--name ${n} --type Keyword`).join(' ')}`,
    );
  }
}
