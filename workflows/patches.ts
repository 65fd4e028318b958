/**
 * The life of a change to workflow code that alters history, after the baseline (workflows/baseline.ts):
 *
 * 1. **patched.** The change asks `patched(PATCHES.x)` at the command it changes, with a name
 *    `<what>-v1` listed below, and a replay fixture recorded by the new build goes in
 *    test/fixtures/histories/ beside the ones that must keep replaying the old way.
 * 2. **deprecated.** Once the cutoff query (docs/deploy.md, "Moving to a new baseline") shows no run
 *    open that started before the change, `patched(P)` becomes `deprecatePatch(P)` and the old branch
 *    goes: new runs stop recording the marker, runs with it still replay.
 * 3. **deleted.** At the next baseline the name leaves this list, BASELINE goes up, and every fixture is
 *    recorded anew: the dev and worker commands refuse a state directory of an older baseline that
 *    still has open runs (runtime/baseline.ts).
 *
 * The budget: at most {@link PATCH_BUDGET} names live at once (test/unit/patches.test.ts). Past it, cut a
 * baseline instead of adding a sixth: each name is a branch every reader of the workflow code pays for.
 */
export const PATCHES = {} as const satisfies Record<string, `${string}-v${number}`>;

export const PATCH_BUDGET = 5;
