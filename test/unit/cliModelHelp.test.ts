import { strict as assert } from 'node:assert';
import { buildCli } from '../../cli/main';

// The --model help of worker and dev (#28): one default, said once (commander printed the resolved
// value as a second "(default: "demo")" under the one the text gives).

describe('CLI --model help', () => {
  for (const name of ['worker', 'dev'])
    it(`${name}: one default, said once`, () => {
      const cmd = buildCli().commands.find((c) => c.name() === name)!;
      const help = cmd.helpInformation();
      const block = help.slice(help.indexOf('--model <spec>')).split(/\n {2}-/)[0]!;
      assert.equal(block.match(/\(default:/g)?.length, 1, block);
      assert.match(
        block.replace(/\s+/g, ' '),
        /\(default: \$OPENWORKER_MODEL, else a provider with a key set, else demo\)/,
      );
      // The value comes from the settings when the command runs (cli/processes.ts), not from the help.
      const model = cmd.options.find((o) => o.long === '--model')!;
      assert.equal(model.defaultValue, undefined);
    });
});
