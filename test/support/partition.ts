import net from 'node:net';

/**
 * A loopback TCP proxy between one worker and the Temporal frontend, to cut that worker off: after
 * `partition()` nothing is forwarded either way and the worker's sockets stay open, so its gRPC
 * calls (heartbeats, completions, polls) stall while the process runs on, its other connections
 * (SMTP) untouched. A worker that gives up on a connection and dials again reaches a proxy that
 * accepts and says nothing, so the partition holds for new connections too.
 *
 * The server's side of each connection is cut rather than left silent: the frontend then drops
 * the worker's long polls at once, as it does once its keepalive gives up, instead of handing a
 * task (the retry's activity, the turn's workflow task) to a poll that can never answer.
 */

export interface PartitionProxy {
  /** host:port for the worker's TEMPORAL_ADDRESS. */
  address: string;
  /** Connections accepted so far, and how many of them arrived during the partition. */
  stats(): { accepted: number; heldInPartition: number };
  /**
   * `server: 'silent'` leaves the server's side open and unanswered too (a partition as the server
   * sees it before its keepalive gives up: tasks handed to the worker's open polls are lost).
   */
  partition(opts?: { server?: 'cut' | 'silent' }): void;
  /** Destroys every socket and stops listening. */
  close(): Promise<void>;
}

const MAX_CONNECTIONS = 64;

const isLoopback = (host: string): boolean =>
  host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);

export async function startPartitionProxy(target: string): Promise<PartitionProxy> {
  const i = target.lastIndexOf(':');
  const host = target.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(target.slice(i + 1));
  if (!isLoopback(host) || !Number.isInteger(port))
    throw new Error(`partition proxy: the target must be a loopback host:port, got ${target}`);

  const sockets = new Set<net.Socket>();
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let partitioned = false;
  let accepted = 0;
  let heldInPartition = 0;
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    s.on('error', () => s.destroy()); // a reset on either side must not crash the test process
  };
  const hold = (s: net.Socket) => {
    s.pause(); // read nothing, write nothing: the peer's calls stall on an open connection
  };

  const server = net.createServer((client) => {
    accepted++;
    track(client);
    if (sockets.size > MAX_CONNECTIONS) return client.destroy();
    if (partitioned) {
      heldInPartition++;
      return hold(client);
    }
    const upstream = net.connect({ host, port });
    track(upstream);
    const pair = { client, upstream };
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      pairs.delete(pair);
      // Outside a partition a closed side closes the other, as a direct connection would.
      if (!partitioned) [client, upstream].forEach((s) => s.destroy());
    };
    client.once('close', end);
    upstream.once('close', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port: own } = server.address() as net.AddressInfo;

  return {
    address: `127.0.0.1:${own}`,
    stats: () => ({ accepted, heldInPartition }),
    partition: ({ server: side = 'cut' } = {}) => {
      partitioned = true;
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        hold(client);
        if (side === 'cut') upstream.destroy();
        else hold(upstream);
      }
    },
    close: async () => {
      partitioned = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
