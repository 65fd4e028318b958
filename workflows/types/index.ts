// The types shared by workflows, activities and the client, by concern. Import from here.
//
// Tagged unions: `kind` names the variant (policy outcomes and steps, decisions, answers), and a check
// that can refuse is `{ ok: true, ... } | { ok: false; why }`. Two published shapes keep their own
// tag because recorded histories and users' code read them: ledger events (`type`, in queries and
// exports) and a tool's reconcile answer (`status`, returned by tools).
export * from './tool';
export * from './ledger';
export * from './decisions';
export * from './session';
export * from './activities';
