import net from 'node:net';
import { DYNAMIC_CONFIG } from '../../dev/server';

// The files and ports a run of test/support/prodServer.ts gives the Temporal server.

/**
 * A free port below 32768: the PostgreSQL schema keeps a host's membership port in a SMALLINT
 * (cluster_membership.rpc_port), so an ephemeral port (32768–60999 here) stops the server at start.
 */
export async function membershipPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    const free = await new Promise<boolean>((resolve) => {
      const srv = net.createServer().once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** Dynamic config file (JSON is YAML): the keys and values the dev server gets as --dynamic-config-value. */
export function dynamicConfigYaml(): string {
  return JSON.stringify(Object.fromEntries(Object.entries(DYNAMIC_CONFIG).map(([k, value]) => [k, [{ value }]])));
}

/** Server config (JSON is YAML), after the module's config/development-postgres12.yaml; no metrics, pprof or archival. */
export function serverConfigYaml(
  pgPort: number,
  ports: Record<string, [number, number]>,
  dynamicConfig: string,
): string {
  const sql = (databaseName: string, conns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `127.0.0.1:${pgPort}`,
      connectProtocol: 'tcp',
      user: 'temporal',
      password: '',
      maxConns: conns,
      maxIdleConns: conns,
      maxConnLifetime: '1h',
    },
  });
  const services = Object.fromEntries(
    Object.entries(ports).map(([name, [grpcPort, membershipPort]]) => [
      name,
      { rpc: { grpcPort, membershipPort, bindOnLocalHost: true } },
    ]),
  );
  const active = {
    enabled: true,
    initialFailoverVersion: 1,
    rpcName: 'frontend',
    rpcAddress: `127.0.0.1:${ports.frontend![0]}`,
  };
  return JSON.stringify(
    {
      log: { stdout: true, level: 'warn' },
      persistence: {
        defaultStore: 'default',
        visibilityStore: 'visibility',
        numHistoryShards: 4,
        datastores: { default: sql('temporal', 20), visibility: sql('temporal_visibility', 10) },
      },
      global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
      services,
      clusterMetadata: {
        enableGlobalNamespace: false,
        failoverVersionIncrement: 10,
        masterClusterName: 'active',
        currentClusterName: 'active',
        clusterInformation: { active },
      },
      dcRedirectionPolicy: { policy: 'noop' },
      dynamicConfigClient: { filepath: dynamicConfig, pollInterval: '10s' },
    },
    null,
    1,
  );
}
