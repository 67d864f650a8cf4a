"""cdp.py: a minimal headless-Chromium driver over the DevTools protocol
(standard library only: a WebSocket client of its own), for the HTML report
tests in run_tests.py.

    with Browser(chromium_path) as b:
        p = b.page(width, height)
        p.goto("file:///...", ready="document.body.dataset.ready")
        p.eval("1 + 1"); p.screenshot("out.png"); p.errors  # console errors

Design: one browser process per Browser (--remote-debugging-port=0, the
port read from its "DevTools listening on" stderr line), one WebSocket to
the browser target, pages attached in flat mode (commands carry their
sessionId).  Calls are synchronous: send, then read messages until the
answer with the same id arrives; events read meanwhile are kept (console
errors and uncaught exceptions end up in Page.errors)."""
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time


class WebSocket:
    def __init__(self, url, timeout=60):
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        host, port, path = m.group(1), int(m.group(2)), m.group(3)
        self.s = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n" % (path, host, port, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                raise IOError("websocket handshake failed")
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise IOError("websocket handshake refused: %r" % head[:100])

    def send(self, text):
        data = text.encode()
        n = len(data)
        hdr = bytes([0x81])
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise IOError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            data = self._read(n)
            op = b0 & 0x0F
            if op == 8:
                raise IOError("websocket closed by the browser")
            if op in (0, 1, 2):
                msg += data
                if b0 & 0x80:
                    return msg.decode()


class Page:
    def __init__(self, browser, session):
        self.b, self.session, self.errors = browser, session, []

    def call(self, method, **params):
        return self.b.call(method, params, self.session)

    def goto(self, url, ready, timeout=60):
        self.call("Page.navigate", url=url)
        end = time.time() + timeout
        while time.time() < end:
            v = self.eval(ready)
            if v:
                return v
            time.sleep(0.05)
        raise TimeoutError("page not ready: " + url)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("page: %s" % r["exceptionDetails"].get("exception", {}).get("description", r))
        return r["result"].get("value")

    def thread_time(self):
        """CPU time of the page's main thread so far, in seconds (needs
        enable_thread_time): on a loaded machine, wall-clock timings
        measure the other processes as much as the page."""
        return {m["name"]: m["value"] for m in self.call("Performance.getMetrics")["metrics"]}["ThreadTime"]

    def enable_thread_time(self):
        self.call("Performance.enable", timeDomain="threadTicks")

    def screenshot(self, path, selector=None, scale=1):
        """The page, or the box of the element [selector], at [scale]."""
        kw = {}
        if selector:
            box = self.eval("(function(){var r=document.querySelector(%s).getBoundingClientRect();"
                            "return [r.left+scrollX,r.top+scrollY,r.width,r.height];})()" % json.dumps(selector))
            kw["clip"] = {"x": box[0], "y": box[1], "width": max(1, box[2]), "height": max(1, box[3]),
                          "scale": scale}
        r = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, **kw)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))


class Browser:
    def __init__(self, chrome):
        self.dir = tempfile.mkdtemp(prefix="cdp-")
        self.proc = subprocess.Popen(
            [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", "--user-data-dir=" + self.dir, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = None
        end = time.time() + 60
        while time.time() < end and url is None:
            line = self.proc.stderr.readline()
            if not line:
                break
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                url = m.group(1)
        if url is None:
            self.close()
            raise IOError("chromium did not start")
        self.ws = WebSocket(url)
        self.next_id = 0
        self.pages = {}

    def call(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            r = json.loads(self.ws.recv())
            if r.get("id") == self.next_id:
                if "error" in r:
                    raise RuntimeError("%s: %s" % (method, r["error"]))
                return r.get("result", {})
            self.event(r)

    def event(self, r):
        p = self.pages.get(r.get("sessionId"))
        if not p:
            return
        m, a = r.get("method"), r.get("params", {})
        if m == "Runtime.exceptionThrown":
            p.errors.append(a["exceptionDetails"].get("exception", {}).get("description", "exception"))
        elif m == "Runtime.consoleAPICalled" and a.get("type") in ("error", "assert"):
            p.errors.append(" ".join(str(x.get("value", x.get("description"))) for x in a.get("args", [])))
        elif m == "Log.entryAdded" and a["entry"].get("level") == "error":
            p.errors.append(a["entry"].get("text", ""))

    def page(self, width=1400, height=1000):
        t = self.call("Target.createTarget", {"url": "about:blank"})
        s = self.call("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True})["sessionId"]
        p = Page(self, s)
        self.pages[s] = p
        for m in ("Runtime.enable", "Log.enable", "Page.enable"):
            p.call(m)
        p.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
               deviceScaleFactor=1, mobile=False)
        return p

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


def png_stats(path):
    """(width, height, distinct colours, share of non-white pixels) of an
    8-bit RGB/RGBA non-interlaced PNG, as Chromium writes them."""
    import zlib
    data = open(path, "rb").read()
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 4 if ctype == 6 else 3
    raw, stride = zlib.decompress(idat), w * bpp
    prev, colours, nonwhite = bytearray(stride), set(), 0
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 4 == 0:
            for x in range(0, w, 4):
                px = bytes(line[x * bpp:x * bpp + 3])
                colours.add(px)
                if px != b"\xff\xff\xff":
                    nonwhite += 1
        prev = line
    return w, h, len(colours), nonwhite / max(1, ((h + 3) // 4) * ((w + 3) // 4))
