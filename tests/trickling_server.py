"""A local HTTP server that answers at once, then sends a byte every 0.1 s: never silent for a
download's per-wait timeout, never done (it hangs up after 5 s). For the downloads' deadlines.
Not collected by pytest (its name does not start with test_)."""
import contextlib
import http.server
import threading
import time


class Trickle(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "10000000")
        self.end_headers()
        began = time.monotonic()
        try:
            while not self.server.stopping.is_set() and time.monotonic() - began < 5:
                self.wfile.write(self.server.byte)
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:  # the download gave up
            pass

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def trickling(byte):
    """The address http://127.0.0.1:PORT of a server trickling `byte`, stopped when the block ends."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads, server.stopping, server.byte = True, threading.Event(), byte
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
