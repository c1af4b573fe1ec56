// `jobs plan` and `run --plan` as text (src/engine/preview.ts): a line a window, its columns lined
// up whatever the words (a newcomer read `skip  done` under `resume  submitted` as shifted).

import { describe, expect, it } from 'vitest';
import { previewLines } from '../../src/engine/preview.js';

describe('the plan as text', () => {
  it('pads the period and the action to their longest, the report ID last', () => {
    expect(previewLines([
      { since: '2026-11-01', until: '2026-11-01', action: 'skip', reason: 'done' },
      { since: '2026-11-02', until: '2026-11-08', action: 'resume', reason: 'submitted', reportId: 'r1' },
      { since: '2026-11-09', until: '2026-11-09', action: 'fetch', reason: 'new' },
    ])).toEqual([
      '2026-11-01              skip    done',
      '2026-11-02..2026-11-08  resume  submitted  r1',
      '2026-11-09              fetch   new',
    ]);
    expect(previewLines([])).toEqual(['nothing to fetch: every window is done']);
  });
});
