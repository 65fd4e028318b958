import { strict as assert } from 'node:assert';
import { unlistedTool } from '../../client/tools';

// A grant names a tool exactly as the worker lists it (#28): what the refusal says.

describe('grants: unlistedTool', () => {
  const cases: { name: string; tool: string; served: string[]; want: RegExp | undefined }[] = [
    { name: 'a served tool passes', tool: 'send_email', served: ['lookup', 'send_email'], want: undefined },
    {
      name: 'a typo lists what is served, sorted',
      tool: 'send_emial',
      served: ['send_email', 'lookup'],
      want: /^tool 'send_emial' is not one the worker serves \(it serves lookup, send_email\); a grant names a tool exactly as the worker lists it$/,
    },
    { name: 'case matters', tool: 'Send_Email', served: ['send_email'], want: /^tool 'Send_Email' is not one/ },
    { name: 'no tools at all', tool: 'x', served: [], want: /\(it serves no tools\)/ },
    {
      name: 'a long list is cut at 20, with the count of the rest',
      tool: 'x',
      served: Array.from({ length: 25 }, (_, i) => `t${String(i).padStart(2, '0')}`),
      want: /it serves t00, .*, t19 and 5 more\)/,
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const why = unlistedTool(c.tool, c.served);
      if (!c.want) assert.equal(why, undefined);
      else assert.match(why ?? '', c.want);
    });
});
