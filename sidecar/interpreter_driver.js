// The persistent Node.js interpreter's driver, embedded in the sidecar
// (interpreter.go, nodeRuntime). Protocol: one JSON request per line on
// stdin ({"code": "..."}), one JSON reply per line on descriptor 3
// ({"stdout", "result", "error", "truncated"}); the first line written is
// {"ready": true}. Code runs as a script in this process's global scope,
// so variables, functions and required modules persist between requests;
// a promise it ends with is awaited. What it writes through console or
// process.stdout/stderr is captured, up to CAP bytes per request; child
// processes that inherit stdout write to the sidecar's log, never into
// the protocol.
'use strict';
const fs = require('node:fs');
const readline = require('node:readline');
const util = require('node:util');
const vm = require('node:vm');

const CAP = Number(process.argv[process.argv.length - 1]) || 256 * 1024;
const replies = fs.createWriteStream(null, { fd: 3 });

let captured = [];
let size = 0;
let truncated = false;

function capture(chunk, encoding) {
  let b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk), typeof encoding === 'string' ? encoding : 'utf8');
  const room = CAP - size;
  if (b.length > room) {
    truncated = true;
    b = b.subarray(0, Math.max(room, 0));
  }
  captured.push(b);
  size += b.length;
}

for (const stream of [process.stdout, process.stderr]) {
  stream.write = (chunk, encoding, cb) => {
    capture(chunk, encoding);
    const done = typeof encoding === 'function' ? encoding : cb;
    if (typeof done === 'function') process.nextTick(done);
    return true;
  };
}

// What module code has as locals, for scripts: require resolves from the
// working directory (the workspace).
globalThis.require = require('node:module').createRequire(process.cwd() + '/');

function reply(obj) {
  replies.write(JSON.stringify(obj) + '\n');
}

// cut returns text at most CAP bytes (UTF-8), which the server's
// held-output budget counts on: its start marked "... (truncated)", or,
// middle, its start and its end around the mark (a stack's first line is
// the error, its last the outermost frame).
function cut(text, middle) {
  const b = Buffer.from(text, 'utf8');
  if (b.length <= CAP) return text;
  // Cut at character boundaries: a continuation byte is 10xxxxxx.
  const head = (n) => {
    while (n > 0 && (b[n] & 0xc0) === 0x80) n--;
    return b.subarray(0, n).toString('utf8');
  };
  if (middle) {
    const half = Math.floor(CAP / 2);
    let i = b.length - half;
    while (i < b.length && (b[i] & 0xc0) === 0x80) i++;
    return head(half) + '\n... (truncated) ...\n' + b.subarray(i).toString('utf8');
  }
  return head(CAP) + '... (truncated)';
}

// userStack is e's stack without this driver's frames: the code runs as
// input.js through vm.runInThisContext, and the frames from that call out
// (the vm module, run, the readline loop) are the driver's, not the
// user's. The driver's call is the outermost one, so a vm call of the
// user's own keeps its frames.
function userStack(e) {
  if (!e || !e.stack) return String(e);
  const lines = String(e.stack).split('\n');
  let i = lines.length - 1;
  while (i > 0 && !/^\s+at (Script|Object)\.runInThisContext \(node:vm/.test(lines[i])) i--;
  while (i > 1 && /^\s+at .*\(node:vm:/.test(lines[i - 1])) i--; // the vm module's own frames of that call
  return (i > 0 ? lines.slice(0, i) : lines).join('\n');
}

async function run(code) {
  captured = [];
  size = 0;
  truncated = false;
  let result = null;
  let error = null;
  try {
    let value = vm.runInThisContext(code, { filename: 'input.js' });
    if (value && typeof value.then === 'function') {
      value = await value;
    }
    if (value !== undefined) {
      result = cut(util.inspect(value, { depth: 4, maxArrayLength: 100, breakLength: 120 }), false);
    }
  } catch (e) {
    error = cut(userStack(e), true);
  }
  // Output written by callbacks of this request that already ran.
  await new Promise((resolve) => setImmediate(resolve));
  return { stdout: Buffer.concat(captured).toString('utf8'), result, error, truncated };
}

process.on('unhandledRejection', (e) => capture('Unhandled rejection: ' + (e && e.stack ? e.stack : String(e)) + '\n'));
process.on('uncaughtException', (e) => capture('Uncaught exception: ' + (e && e.stack ? e.stack : String(e)) + '\n'));

const rl = readline.createInterface({ input: process.stdin, terminal: false });
const queue = [];
let busy = false;

async function next() {
  if (busy) return;
  busy = true;
  while (queue.length > 0) {
    const line = queue.shift();
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      reply({ stdout: '', result: null, error: 'bad request: ' + e.message, truncated: false });
      continue;
    }
    reply(await run(String(req.code || '')));
  }
  busy = false;
}

rl.on('line', (line) => {
  queue.push(line);
  next();
});
rl.on('close', () => process.exit(0));
reply({ ready: true });
