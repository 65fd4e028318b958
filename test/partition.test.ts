import { strict as assert } from 'node:assert';
import net from 'node:net';
import { once } from 'node:events';
import { startPartitionProxy, type PartitionProxy } from './support/partition';
import { eventually } from './support/scenario';

// The partition proxy that F14 (test/matrix/partition.ts) puts between a worker and Temporal.

describe('partition proxy', function () {
  this.timeout(10_000);
  let upstream: net.Server;
  let proxy: PartitionProxy | undefined;
  const serverSide: net.Socket[] = [];
  const open = new Set<net.Socket>();

  before(async () => {
    // An echo server standing in for the frontend.
    upstream = net.createServer((s) => {
      serverSide.push(s);
      s.on('error', () => undefined);
      s.pipe(s);
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
  });
  afterEach(async () => {
    open.forEach((s) => s.destroy());
    await proxy?.close();
  });
  after(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

  const dial = async (address: string): Promise<net.Socket> => {
    const [host, port] = address.split(':');
    const s = net.connect({ host, port: Number(port) });
    s.on('error', () => undefined);
    open.add(s);
    await once(s, 'connect');
    return s;
  };
  const echo = async (s: net.Socket, text: string): Promise<string> => {
    s.write(text);
    const [data] = (await once(s, 'data')) as [Buffer];
    return data.toString();
  };

  it('forwards, then partitions: the server side is cut, the worker side stays open and silent, new connections are held', async () => {
    proxy = await startPartitionProxy(`127.0.0.1:${(upstream.address() as net.AddressInfo).port}`);
    const worker = await dial(proxy.address);
    assert.equal(await echo(worker, 'ping'), 'ping');
    const cut = once(serverSide.at(-1)!, 'close');
    const before = serverSide.length;
    proxy.partition();
    await cut; // the frontend sees the connection go, and drops the worker's long polls
    worker.write('heartbeat'); // goes nowhere, and nothing comes back
    assert.equal(worker.destroyed, false, "the worker's socket stays open");
    const again = await dial(proxy.address); // a reconnect is accepted and held
    const p = proxy;
    await eventually(async () => p.stats().heldInPartition === 1, 'the proxy holds the new connection', 5_000);
    assert.deepEqual(proxy.stats(), { accepted: 2, heldInPartition: 1 });
    assert.equal(again.destroyed, false);
    assert.equal(serverSide.length, before, 'nothing reaches the server during the partition');
    const closed = [once(worker, 'close'), once(again, 'close')];
    await proxy.close();
    await Promise.all(closed);
  });

  it('refuses a target that is not loopback', async () => {
    await assert.rejects(startPartitionProxy('10.0.0.1:7233'), /loopback/);
  });
});
