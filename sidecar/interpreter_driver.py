# The persistent Python interpreter's driver, embedded in the sidecar
# (interpreter.go). Protocol: one JSON request per line on the original
# stdin ({"code": "...", "env": {...}}, env optional: set in os.environ for
# this request only, see with_env); on the original stdout, while the code runs, one
# line per piece of output ({"fd": 1 or 2, "text": "..."}), then one reply
# line ({"result", "error"}); the first line written is {"ready": true}.
# Globals persist between requests.
#
# sys.stdout and sys.stderr are line-buffered and queue their lines on the
# protocol, so Python's own output keeps its order across the two. File
# descriptors 1 and 2 (C extensions, child processes) are pipes of their
# own, drained by a thread and again before each of Python's lines and at
# the end of the request, so what they got before a print comes before it.
# A line goes out at once, unless one went less than GATHER ago: then it
# waits for GATHER to pass with what follows it, so a loop that prints
# fast sends few protocol lines.
#
# SIGINT raises KeyboardInterrupt in the user's code only (the sidecar
# sends it when its client went away): between requests, or while a line
# is being written, the driver carries on.
import ast
import codecs
import fcntl
import io
import json
import os
import select
import signal
import sys
import threading
import time
import traceback

CAP = int(sys.argv[1]) if len(sys.argv) > 1 else 256 * 1024
MEMORY = int(sys.argv[2]) if len(sys.argv) > 2 else 0
PIECE = 32 * 1024  # characters of output per protocol line, at most
GATHER = 0.01  # seconds: output within this of the last sent is sent with what follows

if MEMORY > 0:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    except (ImportError, ValueError, OSError):
        pass

proto_in = os.fdopen(os.dup(0), "rb")
proto_fd = os.dup(1)
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)  # user code must never read the protocol
os.close(null)
pipes = {}  # read end → fd it drains
for fd in (1, 2):
    r, w = os.pipe()
    os.dup2(w, fd)
    os.close(w)
    fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_NONBLOCK)
    pipes[r] = fd


waiting = select.poll()  # has either pipe something to read?
for r in pipes:
    waiting.register(r, select.POLLIN)


class Output:
    """Sends output to the protocol while a request runs, in order: pieces
    written within GATHER of the last line sent go out together."""

    def __init__(self):
        self.lock = threading.RLock()
        self.wake = threading.Condition(self.lock)
        self.active = False
        self.decoders = {}
        self.pending = []  # [fd, [text, ...]] not sent yet, in the order written
        self.size = 0  # characters in pending
        self.sent = 0.0  # when pending was last sent (time.monotonic)
        self.writing = False  # the main thread is writing output
        self.interrupted = False  # SIGINT came while it was

    def write_line(self, obj):
        data = json.dumps(obj).encode() + b"\n"
        while data:
            data = data[os.write(proto_fd, data) :]

    def add(self, fd, text):
        """Queues text of fd, if a request runs; the caller holds lock."""
        if not self.active or not text:
            return
        waiting = bool(self.pending)
        if waiting and self.pending[-1][0] == fd:
            self.pending[-1][1].append(text)
        else:
            self.pending.append([fd, [text]])
        self.size += len(text)
        if self.size >= PIECE or time.monotonic() - self.sent >= GATHER:
            self.send()
        elif not waiting:
            self.wake.notify()

    def send(self):
        """Sends what is queued; the caller holds lock."""
        pending, self.pending, self.size = self.pending, [], 0
        for fd, parts in pending:
            text = "".join(parts)
            for i in range(0, len(text), PIECE):
                self.write_line({"fd": fd, "text": text[i : i + PIECE]})
        self.sent = time.monotonic()

    def guarded(self, fn):
        """Runs fn with an interrupt held off until it is done (main thread)."""
        if threading.current_thread() is not threading.main_thread():
            return fn()
        self.writing = True
        try:
            return fn()
        finally:
            self.writing = False
            if self.interrupted:
                self.interrupted = False
                raise KeyboardInterrupt

    def drain(self, final=False):
        """Queues what the descriptors' pipes hold; the caller holds lock."""
        if not final and not waiting.poll(0):
            return
        for r, fd in pipes.items():
            dec = self.decoders.setdefault(fd, codecs.getincrementaldecoder("utf-8")("replace"))
            while True:
                try:
                    data = os.read(r, 65536)
                except BlockingIOError:
                    break
                if not data:
                    break
                self.add(fd, dec.decode(data))
            if final:
                self.add(fd, dec.decode(b"", True))

    def read_pipes(self):
        """The reader thread: what fds 1 and 2 get is queued as it comes."""
        while True:
            ready, _, _ = select.select(list(pipes), [], [])
            if ready:
                with self.lock:
                    self.drain()

    def flush_late(self):
        """The sender thread: what add held back goes GATHER after the last send."""
        with self.lock:
            while True:
                self.wake.wait_for(lambda: self.pending)
                while self.pending:
                    left = self.sent + GATHER - time.monotonic()
                    if left <= 0:
                        self.send()
                        break
                    self.wake.wait(left)


class Bytes(io.RawIOBase):
    """sys.stdout.buffer: bytes written are decoded (UTF-8) onto the stream."""

    def __init__(self, stream):
        self.stream = stream
        self.dec = codecs.getincrementaldecoder("utf-8")("replace")

    def writable(self):
        return True

    def fileno(self):
        return self.stream.fd

    def write(self, b):
        self.stream.write(self.dec.decode(bytes(b)))
        return len(b)

    def flush(self):
        self.stream.flush()


class Stream(io.TextIOBase):
    """sys.stdout or sys.stderr: line-buffered, queued on the protocol."""

    def __init__(self, out, fd):
        self.out, self.fd, self.buf = out, fd, ""
        self.name = "<stdout>" if fd == 1 else "<stderr>"
        self.buffer = Bytes(self)

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "replace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self.fd

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        if "\n" in s or "\r" in s or len(self.buf) + len(s) >= PIECE:
            self.out.guarded(lambda: self._write(s))
        elif s:
            with self.out.lock:
                self.buf += s  # no line yet: nothing to send
        return len(s)

    def _write(self, s):
        with self.out.lock:
            self.buf += s
            cut = max(self.buf.rfind("\n"), self.buf.rfind("\r")) + 1
            if len(self.buf) >= PIECE:
                cut = len(self.buf)
            if cut:
                text, self.buf = self.buf[:cut], self.buf[cut:]
                self.out.drain()  # what fds 1 and 2 got before this goes first
                self.out.add(self.fd, text)

    def flush(self):
        self.out.guarded(self._flush)

    def _flush(self):
        with self.out.lock:
            text, self.buf = self.buf, ""
            self.out.drain()
            self.out.add(self.fd, text)
            if self.out.pending:
                self.out.send()


out = Output()
sys.stdin = open(os.devnull, "r")
streams = (Stream(out, 1), Stream(out, 2))
sys.stdout, sys.stderr = streams


def on_interrupt(signum, frame):
    f = frame
    while f is not None and f.f_code.co_filename != "<input>":
        f = f.f_back
    if f is None:
        return  # not in the user's code: between requests, or the driver's own work
    if out.writing:
        out.interrupted = True  # raised once the output is written
        return
    raise KeyboardInterrupt


signal.signal(signal.SIGINT, on_interrupt)
DRIVER = on_interrupt.__code__.co_filename  # this file's frames in a traceback
FACADE = "<boxkite>"  # the file name of code a cell runs the user's code through


def run(code, scope):
    tree = ast.parse(code, "<input>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<input>", "exec"), scope)
    if last is None:
        return None
    value = eval(compile(last, "<input>", "eval"), scope)
    if value is None:
        return None
    return cut(repr(value))


def cut(text, middle=False):
    """text at most CAP bytes (UTF-8), which the server's held-output
    budget counts on: its start marked "... (truncated)", or, middle, its
    start and its end around the mark (a traceback's last line is the
    exception)."""
    b = text.encode("utf-8", "surrogatepass")
    if len(b) <= CAP:
        return text
    if middle:
        half = CAP // 2
        return b[:half].decode("utf-8", "ignore") + "\n... (truncated) ...\n" + b[-half:].decode("utf-8", "ignore")
    return b[:CAP].decode("utf-8", "ignore") + "... (truncated)"


def with_env(env, code, scope):
    """Runs code with env set in os.environ, then puts each variable back as
    it was, unless the code itself changed it. In the request rather than
    in the code, so the code's line numbers are its own."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return run(code, scope)
    finally:
        for k, v in saved.items():
            if os.environ.get(k) != env[k]:
                continue
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def finish():
    """Sends what is left of the request's output and stops sending."""
    with out.lock:
        for s in (sys.__stdout__, sys.__stderr__, sys.stdout, sys.stderr, *streams):
            try:
                s.flush()
            except Exception:
                pass
        out.drain(final=True)
        out.send()
        out.active = False


def main():
    threading.Thread(target=out.read_pipes, daemon=True).start()
    threading.Thread(target=out.flush_late, daemon=True).start()
    scope = {"__name__": "__main__", "__builtins__": __builtins__}
    with out.lock:
        out.write_line({"ready": True})
    for line in proto_in:
        result = error = None
        with out.lock:
            out.drain()  # what came between requests is nobody's
            out.active = True
        try:
            req = json.loads(line)
            result = with_env(req.get("env") or {}, req["code"], scope)
        except BaseException as e:  # SystemExit and KeyboardInterrupt are the user's too
            tb = e.__traceback__
            # Leave out this driver's own frames: the user's code starts at <input>.
            while tb is not None and tb.tb_frame.f_code.co_filename != "<input>":
                tb = tb.tb_next
            # A cell that calls into code compiled as <boxkite> (the E2B
            # facade's runner of a code context, which compiles the user's
            # code as <input> in turn): leave out the call's line and the
            # runner's frames too.
            if tb is not None and tb.tb_next is not None and tb.tb_next.tb_frame.f_code.co_filename == FACADE:
                tb = tb.tb_next
                while tb is not None and tb.tb_frame.f_code.co_filename != "<input>":
                    tb = tb.tb_next
            # An interrupt is raised in the driver (on_interrupt, or
            # Stream.write the code called): leave those frames out too.
            t = tb
            while t is not None and t.tb_next is not None:
                if t.tb_next.tb_frame.f_code.co_filename == DRIVER:
                    t.tb_next = None
                t = t.tb_next
            error = cut("".join(traceback.format_exception(type(e), e, tb)), middle=True)
        finish()
        with out.lock:
            out.write_line({"result": result, "error": error})


main()
