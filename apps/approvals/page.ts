// The approvals page: static HTML, CSS and a script, no build step. The script renders with
// textContent only (tool arguments are untrusted text) and talks to the JSON API of app.ts.

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>openworker approvals</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<header><a href="#/" class="home">openworker approvals</a><span id="me"></span></header>
<main id="main"><p>Loading…</p></main>
</body>
</html>
`;

export const PAGE_CSS = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d2433; background: #f6f7f9; }
header { display: flex; justify-content: space-between; padding: 10px 20px; background: #1d2433; color: #fff; }
header a { color: #fff; text-decoration: none; font-weight: 600; }
main { max-width: 1100px; margin: 20px auto; padding: 0 20px; }
table { width: 100%; border-collapse: collapse; background: #fff; }
th, td { text-align: left; padding: 8px 10px; border-bottom: 1px solid #e3e6eb; vertical-align: top; }
tr.call { cursor: pointer; } tr.call:hover, tr.call:focus-within { background: #eef3ff; }
a.open { color: inherit; } a.open:focus { outline: 2px solid #3a6df0; outline-offset: 2px; }
.state { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #e8edf7; white-space: nowrap; }
.state.recovery_required { background: #ffe1d6; } .state.awaiting_approval, .state.awaiting_answer { background: #fff3c4; }
pre { background: #fff; border: 1px solid #e3e6eb; padding: 10px; white-space: pre-wrap; word-break: break-word; }
.actions button { margin: 0 8px 8px 0; padding: 7px 14px; border: 1px solid #1d2433; background: #fff; border-radius: 4px; cursor: pointer; }
.actions button.primary { background: #1d2433; color: #fff; }
.error { color: #a3160b; font-weight: 600; } .ok { color: #11672f; font-weight: 600; }
.muted { color: #69707d; font-size: 13px; } code { font-size: 13px; }
input, textarea { font: inherit; padding: 6px; width: 100%; box-sizing: border-box; margin-bottom: 8px; }
section { margin-bottom: 24px; }
`;

export const PAGE_JS = `'use strict';
const main = document.getElementById('main');
const el = (tag, props, ...kids) => {
  const n = document.createElement(tag);
  Object.assign(n, props || {});
  for (const k of kids) n.append(k instanceof Node ? k : String(k ?? ''));
  return n;
};
const api = async (path, body) => {
  const res = await fetch(path, body === undefined ? {} : {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const data = res.status === 204 ? {} : await res.json();
  if (!res.ok && !(res.status === 409 && data.outcome)) throw Object.assign(new Error(data.error || res.statusText), { status: res.status });
  return data;
};
const ago = (ms) => ms < 60e3 ? Math.round(ms / 1e3) + ' s' : ms < 3600e3 ? Math.round(ms / 60e3) + ' min' : Math.round(ms / 3600e3) + ' h';
// Long argument values fold: the page shows what matters first and everything on demand.
const argsView = (args) => {
  const box = el('div');
  for (const [k, v] of Object.entries(args && typeof args === 'object' ? args : { value: args })) {
    const text = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
    const row = el('div', {}, el('strong', {}, k + ': '));
    if (text.length > 160) row.append(el('details', {}, el('summary', {}, text.slice(0, 120) + '… (' + text.length + ' chars)'), el('pre', {}, text)));
    else row.append(el('code', {}, text));
    box.append(row);
  }
  return box;
};
let live;
function signIn(message) {
  if (live) live.close();
  const token = el('input', { type: 'password', placeholder: 'your token (owa_…)', id: 'token' });
  const form = el('form', {}, el('h2', {}, 'Sign in'), message ? el('p', { className: 'error' }, message) : '', token,
    el('div', { className: 'actions' }, el('button', { className: 'primary', type: 'submit' }, 'Sign in')));
  form.onsubmit = async (e) => {
    e.preventDefault();
    try { await api('/api/session', { token: token.value.trim() }); route(); } catch (err) { signIn(err.message); }
  };
  main.replaceChildren(form);
}
// A turn the inbox could not read hides none of the others: named here, in a banner above them.
const unreadableBanner = (turns) => turns.length ? el('section', { className: 'error', id: 'unreadable' },
  el('p', {}, turns.length + ' waiting turn(s) could not be read; their calls are not listed:'),
  ...turns.map((t) => el('div', {}, el('code', {}, t.workflowId), ': ' + t.why))) : '';
function renderInbox({ calls, unreadable }) {
  const rows = calls.map((c) => {
    const tr = el('tr', { className: 'call' },
      el('td', {}, el('span', { className: 'state ' + c.state }, c.state)),
      el('td', {}, el('a', { className: 'open', href: callHash(c), id: 'open-' + c.executionId }, el('strong', {}, c.tool)), c.target ? ' → ' + c.target : '', argsView(c.argsPreview),
        el('div', { className: 'muted' }, 'execution ', el('code', {}, c.executionId), ' · digest ', el('code', {}, c.argsDigest.slice(0, 19) + '…'))),
      el('td', {}, c.sessionId, el('div', { className: 'muted' }, 'turn ' + c.turn + ' · ' + c.toolCallId)),
      el('td', {}, ago(c.waitedMs)),
      el('td', { className: 'muted' }, c.reason || (c.question ? 'asks: ' + c.question.question : ''), c.notApplied ? el('div', { className: 'error' }, 'not applied: ' + c.notApplied[c.notApplied.length - 1].why) : ''));
    // The link opens it from the keyboard (Tab, Enter) and in a new tab; the whole row for the mouse.
    tr.onclick = (e) => { if (!e.target.closest('details, a')) location.hash = callHash(c); };
    return tr;
  });
  // The list is redrawn at every refresh: the row that had the focus keeps it.
  const focused = document.activeElement && document.activeElement.id;
  main.replaceChildren(el('h2', {}, 'Waiting for a decision (' + calls.length + ')'), unreadableBanner(unreadable),
    calls.length ? el('table', {}, el('tr', {}, ...['state', 'call', 'session', 'waiting', 'why'].map((h) => el('th', {}, h))), ...rows)
      : el('p', { className: 'muted' }, unreadable.length ? 'No waiting call could be read.' : 'Nothing is waiting.'));
  const again = focused && focused.startsWith('open-') && document.getElementById(focused);
  if (again) again.focus();
}
const callHash = (c) => '#/calls/' + c.executionId + '?session=' + encodeURIComponent(c.sessionId) + '&turn=' + c.turn + '&call=' + encodeURIComponent(c.toolCallId);
function showInbox() {
  if (live) live.close();
  live = new EventSource('/api/events');
  live.addEventListener('inbox', (e) => renderInbox(JSON.parse(e.data)));
  live.addEventListener('problem', (e) => main.replaceChildren(el('p', { className: 'error' }, JSON.parse(e.data).error)));
  live.onerror = () => api('/api/me').catch((err) => err.status === 401 && signIn());
}
const LABELS = { approve: 'Approve once', approve_session: 'Approve, and always for this session', approve_target: 'Approve, and always for this target',
  reject: 'Reject', retry: 'Retry (run it again)', retry_now: 'Retry now, without waiting out the last attempt', succeeded: 'It succeeded', failed: 'It failed' };
async function showCall(executionId, query) {
  if (live) live.close();
  const v = await api('/api/calls/' + executionId + '?' + query);
  const e = v.entry;
  const outcome = el('p', { id: 'outcome' });
  const reason = el('input', { placeholder: 'reason (sent with reject, recorded with recovery decisions)', id: 'reason' });
  const result = el('textarea', { placeholder: 'result as JSON (for "It succeeded")', id: 'result', rows: 3 });
  // Approve with edits: change the arguments here and approve; the tool's schema checks them first.
  const shown = JSON.stringify(e.arguments, null, 2);
  const edits = el('textarea', { id: 'edit-args', rows: Math.min(12, shown.split('\\n').length + 1) });
  edits.value = shown;
  // Where the worker counts only signed decisions, this browser's key signs (standing approvals: CLI).
  let key = v.needsSignature ? await loadKey() : undefined;
  const keyInfo = v.needsSignature ? keyPanel(key, (k) => { key = k; }) : '';
  const offered = v.needsSignature ? v.actions.filter((a) => a !== 'approve_session' && a !== 'approve_target') : v.actions;
  const buttons = offered.map((a) => {
    // Only approving is a default; no recovery decision is, least of all running it again.
    const b = el('button', { className: a === 'approve' ? 'primary' : '', type: 'button', id: 'action-' + a }, LABELS[a]);
    b.onclick = async () => {
      outcome.className = ''; outcome.textContent = 'Sending…';
      try {
        const body = { executionId, ref: v.ref, action: a, argsDigest: e.argsDigest, reason: reason.value || undefined };
        if (a === 'succeeded' && result.value.trim()) body.result = JSON.parse(result.value);
        if (a === 'approve' && edits.value !== shown) {
          try { body.arguments = JSON.parse(edits.value); } catch (err) { throw new Error('the edited arguments are not valid JSON: ' + err.message); }
        }
        if (v.needsSignature && a !== 'reject') {
          if (!key) throw new Error('create a signing key first, and have it added to the approvers file');
          body.signature = await sign(key, body);
        }
        const r = await api('/api/decisions', body);
        outcome.className = r.outcome === 'ignored' ? 'error' : 'ok';
        outcome.textContent = a + ': ' + r.outcome + (r.why ? ' (' + r.why + ')' : '') + (r.fence ? ', runs after ' + r.fence.until : '');
        const here = location.hash;
        setTimeout(() => location.hash === here && showCall(executionId, query).catch(fail), 800);
      } catch (err) { outcome.className = 'error'; outcome.textContent = err.message; }
    };
    return b;
  });
  const events = e.events.map((ev) => {
    const { at, type, ...rest } = ev;
    return el('tr', {}, el('td', { className: 'muted' }, at), el('td', {}, type), el('td', {}, rest.by || ''),
      el('td', { className: 'muted' }, Object.keys(rest).length ? JSON.stringify(rest) : ''));
  });
  main.replaceChildren(
    el('p', {}, el('a', { href: '#/' }, '← inbox')),
    el('h2', {}, e.tool + (e.target ? ' → ' + e.target : '') + ' '), el('span', { className: 'state ' + e.state, id: 'call-state' }, e.state),
    el('p', { className: 'muted' }, 'execution ', el('code', {}, v.executionId), ' · session ', v.ref.sessionId, ' · turn ', v.ref.turn,
      ' · call ', v.ref.toolCallId, ' · recovery ', e.recovery || 'manual', ' · attempts ', e.attempts, ' · dispatched ', String(e.dispatched)),
    el('section', {}, el('h3', {}, 'Arguments'), argsView(e.arguments), el('p', { className: 'muted' }, 'digest ', el('code', { id: 'digest' }, e.argsDigest))),
    e.originalDigest ? el('p', { className: 'muted', id: 'edited' }, 'edited by ' + e.editedBy + ' before approving; the model asked ',
      el('code', {}, JSON.stringify(e.originalArguments)), ' (digest ', el('code', {}, e.originalDigest), ')') : '',
    parkedWhy(e) ? el('p', { className: 'error', id: 'parked-why' }, 'Why it parked: ' + parkedWhy(e) +
      (e.dispatched ? '. The tool was called: retry only if you know the first call had no effect.' : '.')) : '',
    v.fence ? el('p', {}, 'A retry waits until ' + v.fence.until + ' (the last attempt\\'s window).') : '',
    v.retryNote ? el('p', { className: e.hasReconcile ? '' : 'error', id: 'retry-note' }, 'A retry: ' + v.retryNote + '.') : '',
    v.needsSignature ? el('section', {}, el('p', { className: 'error', id: 'needs-signature' }, v.needsSignature), keyInfo) : '',
    offered.length ? el('section', { className: 'actions' }, el('h3', {}, 'Decide as ' + me),
      e.state === 'awaiting_approval' ? el('label', { className: 'muted' }, 'Arguments (edit them to approve once with changes)', edits) : '',
      reason, e.state === 'recovery_required' ? result : '', ...buttons, outcome) : outcome,
    e.state === 'awaiting_answer' ? questionPanel(e, executionId, v, query) : '',
    v.notApplied.length ? el('section', { id: 'not-applied' }, el('h3', {}, 'Decisions not applied'),
      ...v.notApplied.map((d) => el('p', { className: 'error' }, d.at + ' ' + d.kind + (d.by ? ' by ' + d.by : '') + ': ' + d.why))) : '',
    el('section', {}, el('h3', {}, 'Ledger'), el('table', { id: 'ledger' }, ...events)),
    grantsPanel(v.ref.sessionId),
    el('section', {}, el('h3', {}, 'This turn (its request, then the latest messages)'),
      ...v.transcript.map((m) => el('div', {}, el('strong', {}, m.role + ': '), typeof m.content === 'string' ? m.content.slice(0, 600) : JSON.stringify(m.content).slice(0, 600)))));
  modelText(v.ref, location.hash);
}
// The turn's running model call, as it writes (streamed through its heartbeat), until the turn closes.
async function modelText(ref, here) {
  const box = el('section', { id: 'model-text', hidden: true });
  main.append(box);
  while (location.hash === here && box.isConnected) {
    const t = await api('/api/turns/' + encodeURIComponent(ref.sessionId) + '/' + ref.turn + '/text').catch(() => undefined);
    if (t && t.running) box.replaceChildren(el('h3', {}, 'The model is writing (model call ' + t.running.iteration + ')'),
      el('p', {}, (t.running.truncated ? '… ' : '') + t.running.text));
    box.hidden = !(t && t.running);
    if (!t || t.closed) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}
// ask_user: the question, with a button per choice or a box for free text; the answer is the call's result.
function questionPanel(e, executionId, v, query) {
  const q = e.arguments || {};
  const said = el('p', { id: 'answer-outcome' });
  const send = async (text) => {
    said.className = ''; said.textContent = 'Sending…';
    try {
      const r = await api('/api/answers', { executionId, ref: v.ref, answer: text });
      said.className = r.outcome === 'ignored' ? 'error' : 'ok';
      said.textContent = 'answer: ' + r.outcome + (r.why ? ' (' + r.why + ')' : '');
      const here = location.hash;
      setTimeout(() => location.hash === here && showCall(executionId, query).catch(fail), 800);
    } catch (err) { said.className = 'error'; said.textContent = err.message; }
  };
  const box = el('textarea', { id: 'answer-text', rows: 3 });
  const controls = Array.isArray(q.choices)
    ? q.choices.map((c, i) => Object.assign(el('button', { type: 'button', id: 'choice-' + (i + 1) }, c), { onclick: () => send(c) }))
    : [box, Object.assign(el('button', { type: 'button', className: 'primary', id: 'send-answer' }, 'Answer'), { onclick: () => send(box.value) })];
  return el('section', { className: 'actions', id: 'question' }, el('h3', {}, 'The agent asks ' + me),
    el('p', { id: 'question-text' }, String(q.question || '')),
    q.timeoutSeconds ? el('p', { className: 'muted' }, 'It waits ' + q.timeoutSeconds + ' s from ' + e.events[0].at + '.') : '', ...controls, said);
}
const parkedWhy = (e) => e.state === 'recovery_required' ? ([...e.events].reverse().find((ev) => ev.type === 'recovery_required') || {}).reason : undefined;
let me = '';
// The operator's signing key: Ed25519 in WebCrypto, its private half not extractable, kept in this
// browser (IndexedDB). The server only ever sees the public half and signatures.
const store = async (mode, fn) => {
  const d = await new Promise((res, rej) => {
    const r = indexedDB.open('openworker-approvals', 1);
    r.onupgradeneeded = () => r.result.createObjectStore('keys');
    r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error);
  });
  return new Promise((res, rej) => {
    const req = fn(d.transaction('keys', mode).objectStore('keys'));
    req.onsuccess = () => res(req.result); req.onerror = () => rej(req.error);
  });
};
const loadKey = () => store('readonly', (s) => s.get(me));
const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)));
const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');
async function createKey() {
  const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
  const raw = await crypto.subtle.exportKey('raw', pair.publicKey);
  const key = { name: me, keyId: 'ed25519:' + hex(await crypto.subtle.digest('SHA-256', raw)).slice(0, 16), publicKey: b64(raw), privateKey: pair.privateKey };
  await store('readwrite', (s) => s.put(key, me));
  return key;
}
// The key's public half and id, or a button that makes one; onKey hears of a new key.
function keyPanel(key, onKey) {
  const panel = el('div', { id: 'signing-key' });
  const show = () => panel.replaceChildren(key
    ? el('p', { className: 'muted' }, 'This browser signs as ' + key.name + ' with key ', el('code', { id: 'key-id' }, key.keyId),
        '. Its public key, for the worker’s approvers file ("' + key.name + '": "…"): ', el('code', { id: 'public-key' }, key.publicKey))
    : el('p', {}, 'No signing key in this browser yet. ', Object.assign(el('button', { type: 'button', id: 'create-key' }, 'Create a signing key'),
        { onclick: async () => { key = await createKey(); onKey(key); show(); } })));
  show();
  return panel;
}
// The session's standing approvals, each with the calls it let through, and a revoke for the active ones.
function grantsPanel(sessionId) {
  const panel = el('section', { id: 'grants' }, el('h3', {}, 'Standing approvals in this session'));
  api('/api/sessions/' + encodeURIComponent(sessionId) + '/grants').then((gs) => {
    if (!gs.length) return panel.append(el('p', { className: 'muted' }, 'None: every call that needs approval asks.'));
    for (const g of gs) {
      const row = el('p', {}, el('code', {}, g.id), ' ', g.tool + (g.target ? ' → ' + g.target : ' (any target)'), ' by ', g.by,
        g.revokedAt ? el('span', { className: 'muted' }, ' · revoked by ' + g.revokedBy) : '',
        el('span', { className: 'muted' }, ' · approved ' + g.approved.length + ' call(s)'));
      if (!g.revokedAt) {
        const b = el('button', { type: 'button', id: 'revoke-' + g.id }, 'Revoke');
        b.onclick = async () => {
          try { await api('/api/grants/revoke', { sessionId, grantId: g.id }); panel.replaceWith(grantsPanel(sessionId)); }
          catch (err) { row.append(el('span', { className: 'error' }, ' ' + err.message)); }
        };
        row.append(' ', b);
      }
      panel.append(row);
    }
  }, (err) => panel.append(el('p', { className: 'error' }, err.message)));
  return panel;
}
async function showKeyPage() {
  if (live) live.close();
  main.replaceChildren(el('p', {}, el('a', { href: '#/' }, '← inbox')), el('h2', {}, 'Signing key'),
    el('p', {}, 'Where a worker counts only signed decisions, this browser signs yours with an Ed25519 key that never leaves it. Give its public key to whoever keeps the worker’s approvers file.'),
    keyPanel(await loadKey(), () => undefined));
}
async function sign(key, body) {
  const req = await api('/api/sign-request', body);
  const bytes = Uint8Array.from(atob(req.message), (ch) => ch.charCodeAt(0));
  return { keyId: key.keyId, signedAt: req.signedAt, value: b64(await crypto.subtle.sign({ name: 'Ed25519' }, key.privateKey, bytes)) };
}
const fail = (err) => err.status === 401 ? signIn() : main.replaceChildren(el('p', { className: 'error' }, err.message));
async function route() {
  try {
    me = (await api('/api/me')).name;
    const out = el('button', { type: 'button' }, 'sign out');
    out.onclick = async () => { await api('/api/logout', {}); document.getElementById('me').textContent = ''; signIn(); };
    document.getElementById('me').replaceChildren(me + ' ', el('a', { href: '#/key', id: 'key-link' }, 'signing key'), ' ', out);
    const m = /^#\\/calls\\/([^?]+)\\??(.*)$/.exec(location.hash);
    if (m) await showCall(m[1], m[2]); else if (location.hash === '#/key') await showKeyPage(); else showInbox();
  } catch (err) { fail(err); }
}
window.addEventListener('hashchange', route);
route();
`;
