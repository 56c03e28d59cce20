#!/usr/bin/env python3
"""Four 100 MiB requests at once against quoter-server, with a small client
calling meanwhile: the server's peak and final resident memory and the small
client's worst call (issue 13). Usage:
  cargo build --release -p armillary-quoter --bin quoter-server
  scripts/big-requests.py target/release/quoter-server thread-pool:4
"""
import socket, struct, subprocess, sys, time, threading, os
exe, model = sys.argv[1], sys.argv[2]
port = int(sys.argv[3]) if len(sys.argv) > 3 else 47311
ior = f"/tmp/armillary-big-{os.getpid()}.ior"
p = subprocess.Popen([exe, "--endpoint", f"iiop://127.0.0.1:{port}", "--ior-file", ior,
    "-ORBConcurrency", model, "-ORBMaxMessageSize", "200M", "-ORBMaxPartialBytes", "1G"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(200):
    if os.path.exists(ior) and open(ior).read().strip(): break
    time.sleep(0.05)
def rss(field):
    for line in open(f"/proc/{p.pid}/status"):
        if line.startswith(field): return int(line.split()[1]) // 1024
def request(rid, size):
    key = b"Quoter"; op = b"get_quote\0"
    body = struct.pack("<I", rid) + bytes([3,0,0,0]) + struct.pack("<H", 0) + b"\0\0" + struct.pack("<I", len(key)) + key
    body += b"\0" * ((-len(body)) % 4) + struct.pack("<I", len(op)) + op
    body += b"\0" * ((-len(body)) % 4) + struct.pack("<I", 0)  # service contexts
    body += b"\0" * ((-(len(body)+12)) % 8)
    arg = b"A" * (size - 1) + b"\0"
    body += struct.pack("<I", len(arg)) + arg
    return b"GIOP\x01\x02\x01\x00" + struct.pack("<I", len(body)) + body
base = rss("VmRSS")
msg = request(1, 100 << 20)
results = []
def client():
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(msg)
    hdr = s.recv(12)
    results.append(hdr[7] if len(hdr) == 12 else None)
    s.close()
small_lat = []
def small():
    # a small client meanwhile: how long its calls stall
    m = request(2, 8)
    s = socket.create_connection(("127.0.0.1", port))
    end = time.time() + 3
    while time.time() < end:
        t = time.time(); s.sendall(m); s.recv(65536); small_lat.append(time.time() - t)
    s.close()
ts = [threading.Thread(target=client) for _ in range(4)] + [threading.Thread(target=small)]
[t.start() for t in ts]; [t.join() for t in ts]
print(f"{model}: RSS before {base} MiB, peak (VmHWM) {rss('VmHWM')} MiB, after {rss('VmRSS')} MiB; replies {results}; small calls {len(small_lat)}, worst {max(small_lat)*1000:.0f} ms")
p.terminate(); p.wait()
