import { strict as assert } from 'node:assert';
import { buildCli } from '../../cli/main';

// The --model help of worker and dev (#28): one default, said once (commander printed the resolved
// value as a second "(default: "demo")" under the one the text gives).

describe('CLI --model help', () => {
  for (const name of ['worker', 'dev'])
    it(`${name}: one default, and it still applies`, () => {
      const cmd = buildCli().commands.find((c) => c.name() === name)!;
      const help = cmd.helpInformation();
      const block = help.slice(help.indexOf('--model <spec>')).split(/\n {2}-/)[0]!;
      assert.equal(block.match(/\(default:/g)?.length, 1, block);
      assert.match(
        block.replace(/\s+/g, ' '),
        /\(default: \$OPENWORKER_MODEL, else a provider with a key set, else demo\)/,
      );
      const model = cmd.options.find((o) => o.long === '--model')!;
      assert.equal(typeof model.defaultValue, 'string', 'the resolved default is still the value');
    });
});
