import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

import { SEARCH_ATTRIBUTES } from '../workflows/definitions';

const SEARCH_ATTRIBUTE_NAMES = SEARCH_ATTRIBUTES.map((k) => k.name);

/** Registers the project's Keyword search attributes when the namespace lacks them. */
export async function ensureSearchAttributes(
  connection: Pick<Connection, 'operatorService'>,
  namespace: string,
): Promise<void> {
  const command = (names: readonly string[]) =>
    `temporal operator search-attribute create --namespace ${namespace} ${names.map((n) => `--name ${n} --type Keyword`).join(' ')}`;
  let customAttributes: Record<string, unknown> | null | undefined;
  try {
    ({ customAttributes } = await connection.operatorService.listSearchAttributes({ namespace }));
  } catch (err) {
    throw new Error(
      `cannot list the search attributes of namespace '${namespace}' (${(err as Error).message}); check the namespace and this worker's permissions, and that ${SEARCH_ATTRIBUTE_NAMES.join(', ')} exist (${command(SEARCH_ATTRIBUTE_NAMES)})`,
    );
  }
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
        `add them with: ${command(missing)}`,
    );
  }
}
