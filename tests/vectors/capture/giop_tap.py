#!/usr/bin/env python3
"""A recording TCP proxy for GIOP, on loopback.

    giop_tap.py --server-file FILE --port-file FILE --out DIR --label TEXT

Listens on 127.0.0.1 (a port the system chooses, written to the port file
once it listens), relays every connection to the server whose HOST:PORT
the server file holds by then (so the server can be started after the tap,
publishing the tap's port in its IORs), and writes each GIOP
message that crosses it to DIR as NNN-<dir>-<MsgType>.bin (the whole
message, 12-byte header included; c2s = client to server, s2c = server to
client; NNN counts messages in the order the tap saw them). A message is
recorded before it is forwarded, so a request always precedes its reply.
On SIGTERM or SIGINT it writes DIR/index.json, which describes every
message (decoded header fields, where the CDR body starts, which request a
reply or fragment belongs to), and exits.

The index format is what tests/vectors/omniorb-4.2 holds and what
crates/armillary-giop/tests/vectors.rs checks; tests/vectors/README.md
explains it. `giop_tap.py --describe DIR` rewrites DIR/index.json from the
.bin files already there (timestamps become null), which is how the
decoder is checked against captures it did not make.
"""

import argparse
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

MSG_TYPES = ["Request", "Reply", "CancelRequest", "LocateRequest", "LocateReply",
             "CloseConnection", "MessageError", "Fragment"]
REPLY_STATUS = ["NO_EXCEPTION", "USER_EXCEPTION", "SYSTEM_EXCEPTION", "LOCATION_FORWARD",
                "LOCATION_FORWARD_PERM", "NEEDS_ADDRESSING_MODE"]
LOCATE_STATUS = ["UNKNOWN_OBJECT", "OBJECT_HERE", "OBJECT_FORWARD", "OBJECT_FORWARD_PERM",
                 "LOC_SYSTEM_EXCEPTION", "LOC_NEEDS_ADDRESSING_MODE"]
COMPLETION = ["COMPLETED_YES", "COMPLETED_NO", "COMPLETED_MAYBE"]
SERVICE_CONTEXTS = {0: "TransactionService", 1: "CodeSets", 2: "ChainBypassCheck",
                    3: "ChainBypassInfo", 4: "LogicalThreadId", 5: "BI_DIR_IIOP",
                    6: "SendingContextRunTime", 7: "INVOCATION_POLICIES",
                    8: "FORWARDED_IDENTITY", 9: "UnknownExceptionInfo",
                    10: "RTCorbaPriority", 11: "RTCorbaPriorityRange",
                    12: "FT_GROUP_VERSION", 13: "FT_REQUEST",
                    14: "ExceptionDetailMessage", 15: "SecurityAttributeService",
                    16: "ActivityService"}
NOTE = ("c2s = client to server, s2c = server to client; offsets are from the start of "
        "the 12-byte GIOP header; body_offset is where the CDR body starts")


class Cdr:
    """Reads CDR from a whole message; alignment counts from its first byte."""

    def __init__(self, data, little, at=12):
        self.data, self.little, self.at = data, little, at

    def align(self, n):
        self.at = (self.at + n - 1) // n * n

    def take(self, n):
        if self.at + n > len(self.data):
            raise ValueError("message ends early")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def ulong(self):
        self.align(4)
        return struct.unpack("<I" if self.little else ">I", self.take(4))[0]

    def ushort(self):
        self.align(2)
        return struct.unpack("<H" if self.little else ">H", self.take(2))[0]

    def octet(self):
        return self.take(1)[0]

    def octets(self):
        return self.take(self.ulong())

    def string(self):
        raw = self.octets()
        return raw[:-1].decode("latin-1") if raw.endswith(b"\0") else raw.decode("latin-1")


def key_text(key):
    text = key.decode("latin-1")
    return text if all(32 <= b < 127 for b in key) else "hex:" + key.hex()


def service_contexts(r):
    out = []
    for _ in range(r.ulong()):
        ident = r.ulong()
        data = r.octets()
        out.append({"id": ident, "name": SERVICE_CONTEXTS.get(ident, "unknown"),
                    "len": len(data)})
    return out


def target_address(r):
    """A GIOP 1.2 TargetAddress: (description, object key or None)."""
    disposition = r.ushort()
    if disposition == 0:
        key = r.octets()
        return {"KeyAddr": key_text(key)}, key
    if disposition == 1:
        tag = r.ulong()
        r.octets()
        return {"ProfileAddr": {"tag": tag}}, None
    index = r.ulong()
    r.string()
    for _ in range(r.ulong()):
        r.ulong()
        r.octets()
    return {"ReferenceAddr": {"selected_profile_index": index}}, None


def body_start(r, entry, minor, length):
    """Where the body starts: GIOP 1.2 aligns a non-empty body on 8."""
    if minor >= 2 and r.at < length:
        r.align(8)
    entry["body_offset"] = r.at


class Session:
    """Every message recorded so far, and what replies and fragments need
    to know about earlier messages."""

    def __init__(self, out, label):
        self.out, self.label = out, label
        self.lock = threading.Lock()
        self.messages = []
        self.operations = {}  # (conn, request id) -> operation
        self.fragmented = {}  # (conn, dir) -> (seq, operation)

    def record(self, conn, direction, data, write=True, stamp=None):
        with self.lock:
            seq = len(self.messages) + 1
            msg_type = MSG_TYPES[data[7]] if data[7] < len(MSG_TYPES) else "Unknown"
            name = "%03d-%s-%s.bin" % (seq, direction, msg_type)
            if write:
                with open(os.path.join(self.out, name), "wb") as f:
                    f.write(data)
            entry = {"seq": seq, "file": name, "conn": conn, "dir": direction,
                     "t": time.time() if stamp is None else stamp}
            try:
                self.describe(entry, conn, direction, data)
            except (ValueError, IndexError, struct.error) as e:
                entry["error"] = str(e)
            self.messages.append(entry)

    def describe(self, entry, conn, direction, data):
        major, minor, flags, kind = data[4], data[5], data[6], data[7]
        little = bool(flags & 1)
        size = struct.unpack("<I" if little else ">I", data[8:12])[0]
        entry.update({"length": len(data), "giop": "%d.%d" % (major, minor),
                      "byte_order": "little" if little else "big", "flags": flags,
                      "msg_type": MSG_TYPES[kind] if kind < len(MSG_TYPES) else "Unknown",
                      "size": size})
        more = bool(flags & 2) if minor >= 1 else False
        if minor >= 1:
            entry["more_fragments"] = more
        r = Cdr(data, little)
        op = None
        if kind == 0:  # Request
            if minor <= 1:
                entry["service_contexts"] = service_contexts(r)
                entry["request_id"] = r.ulong()
                entry["response_expected"] = bool(r.octet())
                if minor == 1:
                    r.take(3)
                key = r.octets()
                entry["object_key"] = key_text(key)
                op = entry["operation"] = r.string()
                entry["requesting_principal_len"] = len(r.octets())
            else:
                entry["request_id"] = r.ulong()
                flags_byte = r.octet()
                r.take(3)
                entry["response_flags"] = flags_byte
                entry["response_expected"] = bool(flags_byte & 1)
                target, key = target_address(r)
                entry["target"] = target
                if key is not None:
                    entry["object_key"] = key_text(key)
                op = entry["operation"] = r.string()
                entry["service_contexts"] = service_contexts(r)
            body_start(r, entry, minor, len(data))
            self.operations[(conn, entry["request_id"])] = op
        elif kind == 1:  # Reply
            if minor <= 1:
                entry["service_contexts"] = service_contexts(r)
                entry["request_id"] = r.ulong()
            else:
                entry["request_id"] = r.ulong()
            status = r.ulong()
            if minor >= 2:
                entry["service_contexts"] = service_contexts(r)
            entry["reply_status"] = REPLY_STATUS[status] if status < 6 else status
            body_start(r, entry, minor, len(data))
            if status in (1, 2) and r.at < len(data):
                entry["exception_id"] = r.string()
                if status == 2:
                    entry["minor"] = r.ulong()
                    completed = r.ulong()
                    entry["completed"] = COMPLETION[completed] if completed < 3 else completed
            op = self.operations.get((conn, entry["request_id"]))
            entry["reply_to"] = op
        elif kind == 2:  # CancelRequest
            entry["request_id"] = r.ulong()
        elif kind == 3:  # LocateRequest
            entry["request_id"] = r.ulong()
            if minor <= 1:
                entry["object_key"] = key_text(r.octets())
            else:
                target, key = target_address(r)
                entry["target"] = target
                if key is not None:
                    entry["object_key"] = key_text(key)
            self.operations[(conn, entry["request_id"])] = "LocateRequest"
        elif kind == 4:  # LocateReply
            entry["request_id"] = r.ulong()
            status = r.ulong()
            entry["locate_status"] = LOCATE_STATUS[status] if status < 6 else status
            body_start(r, entry, minor, len(data))
            entry["reply_to"] = self.operations.get((conn, entry["request_id"]))
        elif kind == 7:  # Fragment
            if minor >= 2:
                entry["request_id"] = r.ulong()
            first = self.fragmented.get((conn, direction))
            if first is not None:
                entry["fragment_of_seq"], entry["fragment_of"] = first
            if not more:
                self.fragmented.pop((conn, direction), None)
            return
        if more:
            self.fragmented[(conn, direction)] = (entry["seq"], op)

    def write_index(self):
        with self.lock:
            index = {"tool": "giop_tap.py", "label": self.label, "note": NOTE,
                     "messages": self.messages}
            with open(os.path.join(self.out, "index.json"), "w") as f:
                json.dump(index, f, indent=1)
                f.write("\n")


def read_message(sock):
    """One whole GIOP message, or None at EOF (or on anything not GIOP)."""
    header = b""
    while len(header) < 12:
        chunk = sock.recv(12 - len(header))
        if not chunk:
            return None
        header += chunk
    if header[:4] != b"GIOP":
        return None
    size = struct.unpack("<I" if header[6] & 1 else ">I", header[8:12])[0]
    body = bytearray()
    while len(body) < size:
        chunk = sock.recv(min(size - len(body), 1 << 16))
        if not chunk:
            return None
        body += chunk
    return header + bytes(body)


def pump(session, conn, direction, src, dst):
    try:
        while True:
            data = read_message(src)
            if data is None:
                break
            session.record(conn, direction, data)
            dst.sendall(data)
    except OSError:
        pass
    for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
        try:
            s.shutdown(how)
        except OSError:
            pass


def serve(args):
    session = Session(args.out, args.label)
    os.makedirs(args.out, exist_ok=True)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % listener.getsockname()[1])
    os.rename(tmp, args.port_file)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    pumps = []

    def accept():
        conn = 0
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            conn += 1
            with open(args.server_file) as f:
                host, port = f.read().strip().rsplit(":", 1)
            server = socket.create_connection((host, int(port)))
            for direction, src, dst in (("c2s", client, server), ("s2c", server, client)):
                t = threading.Thread(target=pump, args=(session, conn, direction, src, dst),
                                     daemon=True)
                t.start()
                pumps.append(t)

    threading.Thread(target=accept, daemon=True).start()
    while not stop.wait(0.1):
        pass
    listener.close()
    # Connections the client closed have drained by now; give any still
    # open a moment to finish what is in flight.
    for t in pumps:
        t.join(timeout=2)
    session.write_index()


def describe(directory):
    """Rewrites DIR/index.json from the .bin files in DIR (no timestamps)."""
    old = {}
    path = os.path.join(directory, "index.json")
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
    conns = {m["file"]: m["conn"] for m in old.get("messages", [])}
    session = Session(directory, old.get("label", os.path.basename(directory)))
    for name in sorted(n for n in os.listdir(directory) if n.endswith(".bin")):
        direction = name.split("-")[1]
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        session.record(conns.get(name, 1), direction, data, write=False, stamp=None)
        session.messages[-1]["t"] = None
    session.write_index()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server-file", help="file holding HOST:PORT of the server to relay to")
    p.add_argument("--port-file", help="where to write the port the tap listens on")
    p.add_argument("--out", help="directory for the messages and index.json")
    p.add_argument("--label", default="", help="the index's label")
    p.add_argument("--describe", metavar="DIR", help="rewrite DIR/index.json from DIR/*.bin")
    args = p.parse_args()
    if args.describe:
        describe(args.describe)
    elif args.server_file and args.port_file and args.out:
        serve(args)
    else:
        p.error("--server-file, --port-file and --out are needed (or --describe DIR)")


if __name__ == "__main__":
    sys.exit(main())
