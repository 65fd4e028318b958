import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storeTable } from '../../bench/matrixReport';
import { dirCounts, encryptionEnv, perTurn, s3RequestCounts } from '../../bench/payloadStore';
import { cells } from '../../bench/report';
import type { RunResult } from '../../bench/report';

describe('bench: what the payload store did per turn (pure)', () => {
  const metrics = [
    '# TYPE SeaweedFS_s3_request_total counter',
    'SeaweedFS_s3_request_total{bucket="",code="200",type="LIST"} 4',
    'SeaweedFS_s3_request_total{bucket="b",code="200",type="PUT"} 5',
    'SeaweedFS_s3_request_total{bucket="b",code="404",type="GET"} 5',
    'SeaweedFS_s3_request_total{bucket="b",code="200",type="GET"} 2',
    'SeaweedFS_s3_request_total{bucket="b",code="200",type="LIST"} 9',
    'SeaweedFS_s3_request_total{bucket="other",code="200",type="PUT"} 100',
    'SeaweedFS_s3_request_seconds_sum{bucket="b",type="PUT"} 0.01',
    'SeaweedFS_s3_request_seconds_count{bucket="b",type="PUT"} 5',
    'SeaweedFS_s3_request_seconds_sum{bucket="b",type="GET"} 0.007',
    'SeaweedFS_s3_bucket_traffic_received_bytes_total{bucket="b"} 2048',
  ].join('\n');

  it("counts one bucket's PUTs, GETs with HEADs (any status), their time and bytes; not LISTs or other buckets", () => {
    const c = s3RequestCounts(metrics, 'b');
    assert.deepEqual(
      { ...c, putMs: Math.round(c.putMs!), getOrHeadMs: Math.round(c.getOrHeadMs!) },
      {
        put: 5,
        getOrHead: 7,
        putMs: 10,
        getOrHeadMs: 7,
        bytesIn: 2048,
      },
    );
    assert.deepEqual(s3RequestCounts('', 'b'), { put: 0, getOrHead: 0, putMs: 0, getOrHeadMs: 0, bytesIn: 0 });
  });

  it('per turn is the difference of two readings over the turns (a key new since the first counts from 0)', () => {
    assert.deepEqual(perTurn({ put: 2, bytes: 100 }, { put: 6, bytes: 500, objects: 4 }, 4), {
      put: 1,
      bytes: 100,
      objects: 1,
    });
    assert.deepEqual(perTurn({ put: 2 }, { put: 2 }, 0), { put: 0 });
  });

  it('a directory: its files and bytes, without half-written .tmp files; a missing directory is empty', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-store-'));
    try {
      assert.deepEqual(dirCounts(join(dir, 'payloads')), { objects: 0, bytes: 0 });
      mkdirSync(join(dir, 'payloads', 'ab'), { recursive: true });
      writeFileSync(join(dir, 'payloads', 'ab', 'abc'), 'x'.repeat(10));
      writeFileSync(join(dir, 'payloads', 'ab', 'abd'), 'x'.repeat(5));
      writeFileSync(join(dir, 'payloads', 'ab', 'abe.1234.tmp'), 'x'.repeat(99));
      assert.deepEqual(dirCounts(join(dir, 'payloads')), { objects: 2, bytes: 15 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--encrypt gives a fresh 32-byte key each run; without it encryption is off, whatever key file exists', () => {
    const a = encryptionEnv(true).OPENWORKER_ENCRYPTION_KEYS!;
    assert.match(a, /^bench=/);
    assert.equal(Buffer.from(a.slice('bench='.length), 'base64').length, 32);
    assert.notEqual(a, encryptionEnv(true).OPENWORKER_ENCRYPTION_KEYS);
    assert.deepEqual(encryptionEnv(false), { OPENWORKER_ENCRYPTION: 'off' });
  });

  it('merges rounds weighted by turns, and the table lists only cells that measured the store (never B0)', () => {
    const run = (system: string, turns: number, store?: Record<string, number>): RunResult => ({
      ...{ system, k: 1, tool: 'noop', latencyMs: 0, n: 1, round: 1, turns, seconds: 1, latencies: [1] },
      cpuPerTurn: { server: 1, store: 4 },
      ...(store ? { storePerTurn: store } : {}),
    });
    const cs = cells([
      run('B0', 5, { objects: 0 }),
      run('B3', 1, { put: 2, objects: 2, bytes: 1024 }),
      run('B3', 3, { put: 2, objects: 2, bytes: 2048 }),
      run('B1', 2),
    ]);
    assert.deepEqual(cs.find((c) => c.system === 'B3')!.storePerTurn, { put: 2, objects: 2, bytes: 1792 });
    assert.equal(cs.find((c) => c.system === 'B1')!.storePerTurn, undefined);
    const rows = storeTable(cs, ['B0', 'B1', 'B3']).filter((l) => l.startsWith('| B'));
    assert.deepEqual(rows, ['| B3 | k=1 noop | 0 | 1 | 2.00 | 1.75 | 2.00 | — | — | 4.0 |']);
    assert.deepEqual(storeTable(cells([run('B1', 2)]), ['B0', 'B1']), []);
  });
});
