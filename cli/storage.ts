import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { checkPayloadStore, describeStore } from '../runtime/payloadStorage';
import { positiveInt, print, settingsOf } from './common';

/** `storage check` and `storage expire`: the payload store each host's workers and clients use. */
export function storageCommands(program: Command): void {
  const storage = program
    .command('storage')
    .description('the payload store (OPENWORKER_PAYLOAD_STORE): check it from this host, expire old payloads');
  storage
    .command('check')
    .description('store a 16 KiB probe payload as a worker would and read it back')
    .action(async (_opts, cmd: Command) => {
      const r = await checkPayloadStore(settingsOf(cmd));
      print(cmd, r, `payload store ${r.store}: stored and read back ${r.bytes} bytes in ${r.ms} ms (${r.driver})`);
    });
  storage
    .command('expire')
    .description(
      'S3: a lifecycle rule that deletes payloads <days> after they were last written; a directory: delete what was not written or reused since (run daily)',
    )
    .requiredOption(
      '--days <n>',
      'how long payloads are kept: the namespace retention plus the longest a turn or session stays open',
      positiveInt('--days'),
    )
    .action(async (opts: { days: number }, cmd: Command) => {
      const settings = settingsOf(cmd);
      const c = settings.payloadStore;
      if (c.kind === 's3') {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { setExpiration } = require('../runtime/s3Driver') as typeof import('../runtime/s3Driver');
        const rules = await setExpiration(c, opts.days, settings.env);
        return print(
          cmd,
          { store: describeStore(c), days: opts.days, rules },
          `payload store ${describeStore(c)}: payloads expire ${opts.days} days after they were written (lifecycle rule openworker-payloads; ${rules.length - 1} other rule(s) kept)`,
        );
      }
      const removed = await removeOlderThan(c.dir, opts.days);
      print(
        cmd,
        { store: c.dir, days: opts.days, removed },
        `payload store ${c.dir}: removed ${removed} payload(s) older than ${opts.days} days`,
      );
    });
}

async function removeOlderThan(dir: string, days: number): Promise<number> {
  const before = Date.now() - days * 86_400_000;
  let removed = 0;
  let names: string[];
  try {
    names = (await fs.readdir(dir, { recursive: true })).map(String);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  for (const name of names.filter((n) => /[0-9a-f]{64}$/.test(n))) {
    const file = path.join(dir, name);
    if ((await fs.stat(file)).mtimeMs < before) {
      await fs.rm(file, { force: true });
      removed++;
    }
  }
  return removed;
}
