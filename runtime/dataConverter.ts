import type { DataConverter, ExternalStorage, PayloadCodec } from '@temporalio/common';
import { ExternalStorageRunner } from '@temporalio/common/lib/internal-non-workflow';
import { claimCheckReader } from './claimCheckReader';
import type { Env } from './config';
import { encryptionCodec, keyringFor, noKeysCodec } from './encryption';
import { externalStorageFor } from './payloadStorage';
import type { Settings } from './settings';
import { asSettings } from './settings';

// What every client and worker sends to Temporal and reads back: payloads sealed by the codecs
// (encryption when keys are set), then, from 16 KiB, moved to external storage by the SDK.

// Library entry points: each takes Settings (or an environment to read them from; default this
// process's, read at the call).

/** The codecs, in encode order: encryption (when keys are set), then the reader of old claim-check references. */
export function defaultPayloadCodecs(from?: Settings | Env): PayloadCodec[] {
  const settings = asSettings(from);
  const ring = keyringFor(settings);
  return [ring ? encryptionCodec(ring) : noKeysCodec(settings.stateDir), claimCheckReader(settings.legacyPayloadDir)];
}

/**
 * The data converter of every client and worker: the default codecs, external storage, and when
 * payloads are encrypted, failure messages and stack traces moved into a (sealed) payload as well.
 */
export function defaultDataConverter(from?: Settings | Env): DataConverter {
  const settings = asSettings(from);
  const encrypted = keyringFor(settings) !== undefined;
  return {
    payloadCodecs: defaultPayloadCodecs(settings),
    externalStorage: externalStorageFor(settings),
    ...(encrypted ? { failureConverterPath: require.resolve('./sealedFailures') } : {}),
  };
}

/** External storage as a codec, for the codec endpoint: encode stores large payloads, decode fetches references. */
export function storageCodec(storage: ExternalStorage): PayloadCodec {
  // The SDK's own runner (internal API, pinned SDK version): the endpoint then answers exactly as a worker would.
  const runner = new ExternalStorageRunner(storage);
  return { encode: (payloads) => runner.store(payloads), decode: (payloads) => runner.retrieve(payloads) };
}

/** What the Web UI's codec endpoint applies: the codecs, then external storage. */
export function endpointCodec(from?: Settings | Env): PayloadCodec {
  const settings = asSettings(from);
  return combinedCodec([...defaultPayloadCodecs(settings), storageCodec(externalStorageFor(settings))]);
}

/** Several codecs as one (the codec endpoint's shape): encode in order, decode in reverse. */
export function combinedCodec(codecs: readonly PayloadCodec[]): PayloadCodec {
  return {
    async encode(payloads) {
      for (const c of codecs) payloads = await c.encode(payloads);
      return payloads;
    },
    async decode(payloads) {
      for (const c of [...codecs].reverse()) payloads = await c.decode(payloads);
      return payloads;
    },
  };
}
