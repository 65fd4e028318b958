import type { PayloadCodec } from '@temporalio/common';
import { readPayloadFile } from './payloadStorage';

/**
 * Reads references written by the claim-check codec that came before External Storage, so turns
 * recorded with it still replay and `show` still reads them. It never writes one. Their payloads
 * are in the directory store: `OPENWORKER_PAYLOAD_STORE` when that is a directory, else the old
 * default `<state dir>/payloads`, or `OPENWORKER_LEGACY_PAYLOAD_DIR`.
 */

export const CLAIM_ENCODING = 'binary/openworker-claim-check';

const decoder = new TextDecoder();

/** `dir`: Settings.legacyPayloadDir. */
export function claimCheckReader(dir: string): PayloadCodec {
  return {
    encode: async (payloads) => payloads,
    async decode(payloads) {
      return Promise.all(
        payloads.map(async (p) => {
          const encoding = p.metadata?.encoding ? decoder.decode(p.metadata.encoding) : undefined;
          if (encoding !== CLAIM_ENCODING) return p;
          let ref: { sha256?: unknown };
          try {
            ref = JSON.parse(decoder.decode(p.data ?? new Uint8Array())) as { sha256?: unknown };
          } catch {
            throw new Error('not a payload reference: its data is not JSON');
          }
          return readPayloadFile(dir, ref?.sha256, 'OPENWORKER_LEGACY_PAYLOAD_DIR');
        }),
      );
    },
  };
}
