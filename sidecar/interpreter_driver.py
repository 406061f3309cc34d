# The persistent Python interpreter's driver, embedded in the sidecar
# (interpreter.go). Protocol: one JSON request per line on the original
# stdin ({"code": "..."}), one JSON reply per line on the original stdout
# ({"stdout", "result", "error", "truncated"}); the first line written is
# {"ready": true}. Globals persist between requests.
#
# File descriptors 1 and 2 are pointed at one pipe that a thread drains, so
# output of print, of C extensions and of child processes is all captured,
# in order. After each request a marker is written through the same pipe:
# once the thread has read it, everything written before has been read.
import ast
import json
import os
import sys
import threading
import traceback

CAP = int(sys.argv[1]) if len(sys.argv) > 1 else 256 * 1024
MEMORY = int(sys.argv[2]) if len(sys.argv) > 2 else 0

if MEMORY > 0:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    except (ImportError, ValueError, OSError):
        pass

proto_in = os.fdopen(os.dup(0), "rb")
proto_out = os.fdopen(os.dup(1), "wb")
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)  # user code must never read the protocol
os.close(null)
pipe_r, pipe_w = os.pipe()
os.dup2(pipe_w, 1)
os.dup2(pipe_w, 2)
os.close(pipe_w)
sys.stdin = open(os.devnull, "r")
sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False, buffering=1)
sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False, buffering=1)


class Capture:
    """Collects what arrives on the pipe, up to CAP bytes per request."""

    def __init__(self):
        self.cond = threading.Condition()
        self.out = bytearray()
        self.truncated = False
        self.pending = b""  # unread tail that may hold the start of a marker
        self.marker = None
        self.seen = False

    def take(self, data):
        room = CAP - len(self.out)
        if len(data) > room:
            self.truncated = True
            data = data[: max(room, 0)]
        self.out += data

    def run(self):
        while True:
            data = os.read(pipe_r, 65536)
            if not data:
                return
            with self.cond:
                buf = self.pending + data
                if self.marker is not None:
                    i = buf.find(self.marker)
                    if i >= 0:
                        self.take(buf[:i])
                        self.pending = buf[i + len(self.marker):]
                        self.marker = None
                        self.seen = True
                        self.cond.notify_all()
                        continue
                    keep = len(self.marker)
                else:
                    keep = 0
                cut = max(len(buf) - keep, 0)
                self.take(buf[:cut])
                self.pending = buf[cut:]

    def begin(self):
        with self.cond:
            self.out = bytearray(self.pending)
            self.pending = b""
            self.truncated = False

    def end(self, marker):
        with self.cond:
            self.marker, self.seen = marker, False
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(1, marker)
        with self.cond:
            self.cond.wait_for(lambda: self.seen, timeout=5)
            self.marker = None
            return bytes(self.out).decode("utf-8", "replace"), self.truncated


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
    text = repr(value)
    if len(text) > CAP:
        text = text[:CAP] + "... (truncated)"
    return text


def main():
    capture = Capture()
    threading.Thread(target=capture.run, daemon=True).start()
    scope = {"__name__": "__main__", "__builtins__": __builtins__}
    seq = 0
    proto_out.write(b'{"ready": true}\n')
    proto_out.flush()
    for line in proto_in:
        seq += 1
        result = error = None
        capture.begin()
        try:
            code = json.loads(line)["code"]
            result = run(code, scope)
        except BaseException as e:  # SystemExit and KeyboardInterrupt are the user's too
            tb = e.__traceback__
            # Leave out this driver's own frames: the user's code starts at <input>.
            while tb is not None and tb.tb_frame.f_code.co_filename != "<input>":
                tb = tb.tb_next
            error = "".join(traceback.format_exception(type(e), e, tb))
        stdout, truncated = capture.end(b"\x00\x01boxkite-end-%d\x01\x00" % seq)
        reply = {"stdout": stdout, "result": result, "error": error, "truncated": truncated}
        proto_out.write(json.dumps(reply).encode() + b"\n")
        proto_out.flush()


main()
