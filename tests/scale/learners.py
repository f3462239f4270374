#!/usr/bin/env python3
"""tests/scale/learners.py — simulated classes for the scale-out and load runs (tests/scale/run.sh).

`drive` first has one teacher per class create it (POST /api/classes; the teacher keeps the
session cookie), then runs every learner as a coroutine (asyncio, one thread) with its own
keep-alive connection. A
learner joins its class with a nickname and then, until the time is up, repeats: check lesson
1's induction challenge (POST /api/progress/check: a progress write, and a pass in the class),
answer lesson 2's pattern quiz (wrong the first time, right after: each answer is a row the
teacher's view counts), and read its progress back. With --think S each learner starts at a
random moment of the first S seconds and waits S seconds between steps. Each teacher polls the class's view every
--teacher-poll seconds with the last ETag, as the teacher's page does. Learners of one class
connect from one loopback address of their own (127.10.x.y: a classroom behind one NAT), each
teacher from another (127.20.x.y), so the server's per-address limits meet a school's traffic;
behind nginx the servers take the address from X-Forwarded-For (--trusted-proxy).
Everything acknowledged (answered 200) goes to --state.

`balancer` reads nginx's access log of the run (run.sh's log_format timing) and prints the
percentiles of nginx's own request times: the servers as the balancer saw them, without the
driver's queueing for a core.

`verify` reads it all back once the run is over: every acknowledged progress write through the
balancer; on each server by itself (--servers), each class's view (the same on every server,
with every learner who joined, every challenge acknowledged done, and at least the wrong
answers acknowledged) and its CSV export; in the database itself (--db: a postgresql:// URL,
read with --psql, or an SQLite file), at least as many answer rows per learner as were
acknowledged. Then, across servers: a teacher's short poll sees a learner's answer made on the
other server; a login on one server opens the view on the other; a learner removed on one is
gone from the other and from every class table; a class deleted on one is gone everywhere,
its teacher's session too.

  learners.py drive  --url http://127.0.0.1:8080 --learners 40 --classes 4 --seconds 20 --state state.json [--think 2]
  learners.py balancer --log access.log
  learners.py verify --url http://127.0.0.1:8080 --servers http://127.0.0.1:8081,http://127.0.0.1:8082 \\
                     --state state.json --db postgresql://... --psql /usr/lib/postgresql/15/bin/psql
Standard library only; loopback only; bounded in time and count.
"""
import argparse
import asyncio
import csv
import http.client
import io
import json
import random
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse

LESSON1, CHALLENGE1 = "causal-mask", "induction-next-word"
CHECK1 = {"lesson": LESSON1, "sentence": "the cat chased the dog . the cat chased the",
          "head": "induction", "mask": True, "query": 8}
LESSON2, QUIZ = "trained-heads", "pattern-quiz"
WRONG, RIGHT = "uniform", "below-diagonal"
WRONG_SHOWN = "an even spread"  # how the teacher's view names WRONG (course/challenge_titles.cpp)
CLASS_TABLES = ("classes", "class_members", "class_attempts", "teacher_sessions")


def classroom_address(c):
    return f"127.10.{c // 200}.{c % 200 + 1}"


def teacher_address(c):
    return f"127.20.{c // 200}.{c % 200 + 1}"


class Client:
    """One keep-alive connection from one source address; JSON in and out."""

    def __init__(self, url, source="127.0.0.1"):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.source = u.hostname, u.port, source
        self.conn = None

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON or None, headers dict, raw text); status 0 when the connection failed."""
        for attempt in range(2):  # a keep-alive connection the balancer closed: open another
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30,
                                                           source_address=(self.source, 0))
                h = dict(headers or {})
                if body is not None:
                    h["Content-Type"] = "application/json"
                self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=h)
                r = self.conn.getresponse()
                data = r.read()
                text = data.decode("utf-8", "replace")
                try:
                    parsed = json.loads(text) if text else None
                except ValueError:
                    parsed = None
                return r.status, parsed, {k.lower(): v for k, v in r.getheaders()}, text
            except (OSError, http.client.HTTPException):
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                if attempt == 1 or method == "POST":
                    return 0, None, {}, ""
        return 0, None, {}, ""


def percentile(values, p):
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * p))]


def cookie_of(headers):
    c = headers.get("set-cookie", "")
    return c.split(";", 1)[0]


def quiz_done(body):
    return bool(body) and body.get("correct") is True


def create_classes(url, n, tag):
    """One teacher per class creates it; at most four at a time (Argon2id each). A 503 (the
    servers' password-hash lane full: by design) is retried after its Retry-After."""
    classes = [None] * n
    retried = [0]
    lock = threading.Lock()
    todo = list(range(n))

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                c = todo.pop()
            client = Client(url, teacher_address(c))
            for _ in range(60):
                status, body, headers, raw = client.request("POST", "/api/classes", {"name": f"Class {c:02d} {tag}"})
                if status == 503:
                    with lock:
                        retried[0] += 1
                    time.sleep(float(headers.get("retry-after", "1")))
                    continue
                break
            if status != 201:
                raise SystemExit(f"learners.py: creating class {c} answered {status}: {raw[:300]}")
            classes[c] = {"index": c, "code": body["class"]["code"], "secret": body["secret"],
                          "cookie": cookie_of(headers), "teacher_address": teacher_address(c),
                          "classroom_address": classroom_address(c)}

    threads = [threading.Thread(target=worker) for _ in range(min(4, n))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if any(c is None for c in classes):
        raise SystemExit("learners.py: not every class was created")
    return classes, retried[0]


class AsyncClient:
    """Client's asyncio twin for the driver: one keep-alive connection from one source address,
    HTTP/1.1 by hand (Content-Length or chunked bodies). One thread drives thousands of them;
    a thread per learner spent the cores on the interpreter's lock instead of on requests."""

    def __init__(self, url, source="127.0.0.1"):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.source = u.hostname, u.port, source
        self.reader = self.writer = None

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def _exchange(self, method, path, body, headers):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port, local_addr=(self.source, 0))
        data = b"" if body is None else json.dumps(body).encode()
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        for k, v in (headers or {}).items():
            head += f"{k}: {v}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + data)
        await self.writer.drain()
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("closed")
        status = int(status_line.split()[1])
        h = {}
        while True:
            line = (await self.reader.readline()).decode("latin-1").strip()
            if not line:
                break
            k, _, v = line.partition(":")
            h[k.strip().lower()] = v.strip()
        if status in (204, 304) or method == "HEAD":
            raw = b""
        elif "content-length" in h:
            raw = await self.reader.readexactly(int(h["content-length"]))
        elif h.get("transfer-encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                raw += chunk[:-2]
        else:
            raw = await self.reader.read()
            h["connection"] = "close"
        if h.get("connection", "").lower() == "close":
            self.close()
        text = raw.decode("utf-8", "replace")
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = None
        return status, parsed, h, text

    async def request(self, method, path, body=None, headers=None):
        """As Client.request."""
        for attempt in range(2):
            try:
                return await asyncio.wait_for(self._exchange(method, path, body, headers), 30)
            except (OSError, ValueError, IndexError, asyncio.TimeoutError, asyncio.IncompleteReadError):
                self.close()
                if attempt == 1 or method == "POST":
                    return 0, None, {}, ""
        return 0, None, {}, ""


def drive(args):
    tag = f"{int(time.time()) % 100000:05d}"
    t_setup = time.monotonic()
    classes, create_retries = create_classes(args.url, args.classes, tag)
    setup_s = time.monotonic() - t_setup
    statuses, latencies, view_latencies = {}, [], []
    learners = []
    loop_lag = []  # how late the driver's own timer fires: its queueing, not the servers'

    async def timed(client, method, path, body=None, headers=None, bucket=None):
        t0 = time.monotonic()
        out = await client.request(method, path, body, headers)
        statuses[out[0]] = statuses.get(out[0], 0) + 1
        (latencies if bucket is None else bucket).append(time.monotonic() - t0)
        return out

    async def learner(n, deadline):
        c = n % args.classes
        me = {"id": f"seat{n:05d}-{tag}-learner", "nickname": f"L{n:04d}", "class": c,
              "joined": False, "progress": False, "answers": 0, "counted": 0, "wrong": 0, "right": False}
        learners.append(me)
        client = AsyncClient(args.url, classroom_address(c))
        if args.think > 0:
            await asyncio.sleep(random.uniform(0, args.think))  # a class arrives within a few seconds, not in one instant
        # Joining is retried after a 429 (its Retry-After): a page would say "wait a moment".
        while time.monotonic() < deadline and not me["joined"]:
            status, _, headers, _ = await timed(client, "POST", "/api/class/join",
                                                {"code": classes[c]["code"], "learner": me["id"], "nickname": me["nickname"]})
            if status == 200:
                me["joined"] = True
            elif status == 429:
                await asyncio.sleep(min(float(headers.get("retry-after", "5")), max(0.0, deadline - time.monotonic())))
            else:
                break
        while me["joined"] and time.monotonic() < deadline:
            status, body, _, _ = await timed(client, "POST", "/api/progress/check", dict(CHECK1, learner=me["id"]))
            if status == 200 and any(ch["id"] == CHALLENGE1 and ch["done"] for ch in (body or {}).get("challenges", [])):
                me["progress"] = True
            answer = WRONG if me["wrong"] == 0 and not me["right"] else RIGHT
            status, body, _, _ = await timed(client, "POST", f"/api/lessons/{LESSON2}/check",
                                             {"learner": me["id"], "challenge": QUIZ, "answer": {"choice": answer}})
            if status == 200:
                me["answers"] += 1
                if not me["right"]:  # a class keeps checks up to the first pass (ClassStore::record_attempt)
                    me["counted"] += 1
                if answer == WRONG:
                    me["wrong"] += 1
                elif quiz_done(body):
                    me["right"] = True
            await timed(client, "GET", f"/api/progress?learner={me['id']}&lesson={LESSON1}")
            if args.think > 0:
                await asyncio.sleep(args.think)  # a person reading the page before the next step
        client.close()

    async def teacher(c, deadline):
        client = AsyncClient(args.url, teacher_address(c))
        etag = None
        await asyncio.sleep(random.uniform(0, args.teacher_poll))  # the teachers' pages were not opened in step
        while time.monotonic() < deadline:
            headers = {"Cookie": classes[c]["cookie"]}
            if etag:
                headers["If-None-Match"] = etag
            status, _, h, _ = await timed(client, "GET", f"/api/class/view?code={classes[c]['code']}", headers=headers,
                                          bucket=view_latencies)
            if status == 200:
                etag = h.get("etag", etag)
            await asyncio.sleep(args.teacher_poll)
        client.close()

    async def lag(deadline):
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            await asyncio.sleep(0.1)
            loop_lag.append(time.monotonic() - t0 - 0.1)

    async def everyone():
        deadline = time.monotonic() + args.seconds
        await asyncio.gather(*[learner(n, deadline) for n in range(args.learners)],
                             *[teacher(c, deadline) for c in range(args.classes)], lag(deadline))

    asyncio.run(everyone())
    state = {"tag": tag, "classes": classes, "learners": sorted(learners, key=lambda m: m["id"])}
    with open(args.state, "w") as f:
        json.dump(state, f)
    total = sum(statuses.values())
    ok = statuses.get(200, 0) + statuses.get(304, 0)
    failed = total - ok - statuses.get(503, 0)
    print(f"classes {args.classes} (created in {setup_s:.1f} s, {create_retries} retried after 503) "
          f"learners {args.learners} seconds {args.seconds}")
    print(f"requests {total} failed {failed} unavailable_503 {statuses.get(503, 0)} "
          f"statuses {json.dumps({str(k): v for k, v in sorted(statuses.items())})}")
    print(f"joined {sum(m['joined'] for m in learners)} progress_acknowledged {sum(m['progress'] for m in learners)} "
          f"answers_acknowledged {sum(m['answers'] for m in learners)}")
    print(f"learner_p50_ms {percentile(latencies, 0.50) * 1000:.1f} learner_p99_ms {percentile(latencies, 0.99) * 1000:.1f} "
          f"view_p50_ms {percentile(view_latencies, 0.50) * 1000:.1f} view_p99_ms {percentile(view_latencies, 0.99) * 1000:.1f} "
          f"views {len(view_latencies)} driver_lag_p99_ms {percentile(loop_lag, 0.99) * 1000:.1f}")
    return 0


def balancer(args):
    """Percentiles of nginx's own $request_time for the drive's requests (log_format timing in
    run.sh: status, seconds, URI): the servers' time as the balancer saw it, without the
    driver's."""
    learner, view = [], []
    with open(args.log) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 3 or parts[2].startswith(("/api/classes", "/api/health")):
                continue
            (view if parts[2].startswith("/api/class/view") else learner).append(float(parts[1]))
    print(f"balancer_requests {len(learner) + len(view)} "
          f"balancer_learner_p50_ms {percentile(learner, 0.50) * 1000:.1f} "
          f"balancer_learner_p99_ms {percentile(learner, 0.99) * 1000:.1f} "
          f"balancer_view_p50_ms {percentile(view, 0.50) * 1000:.1f} balancer_view_p99_ms {percentile(view, 0.99) * 1000:.1f}")
    return 0


class Database:
    """Reads the store directly: PostgreSQL through psql, SQLite through Python's sqlite3."""

    def __init__(self, target, psql):
        self.target, self.psql = target, psql

    def rows(self, sql):
        if self.target.startswith("postgresql://") or self.target.startswith("postgres://"):
            out = subprocess.run([self.psql, "-qAtX", "-F", "\t", self.target, "-c", sql],
                                 check=True, capture_output=True, text=True).stdout
            return [line.split("\t") for line in out.splitlines() if line]
        with sqlite3.connect(f"file:{self.target}?mode=ro", uri=True) as db:
            return [[str(v) for v in row] for row in db.execute(sql).fetchall()]

    def count(self, sql):
        return int(self.rows(sql)[0][0])


def cell(view, nickname, lesson, challenge):
    for learner in view["learners"]:
        if learner["nickname"] == nickname:
            for ls in learner["lessons"]:
                if ls["lesson"] == lesson:
                    for c in ls["challenges"]:
                        if c["challenge"] == challenge:
                            return c
    return None


def verify(args):
    with open(args.state) as f:
        state = json.load(f)
    classes, learners = state["classes"], state["learners"]
    servers = [s for s in args.servers.split(",") if s]
    db = Database(args.db, args.psql)
    problems = []

    def problem(text):
        problems.append(text)

    # 1. Every acknowledged progress write, through the balancer.
    acked = [m for m in learners if m["progress"]]
    lost = []
    lost_lock = threading.Lock()

    def check(ms):
        c = Client(args.url)
        for m in ms:
            status, body, _, _ = c.request("GET", f"/api/progress?learner={m['id']}&lesson={LESSON1}")
            if not (status == 200 and any(ch["id"] == CHALLENGE1 and ch["done"] for ch in body.get("challenges", []))):
                with lost_lock:
                    lost.append((m["id"], status))

    threads = [threading.Thread(target=check, args=(acked[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"verify: {len(acked)} acknowledged progress writes read back through the balancer: "
          f"{len(acked) - len(lost)} there, {len(lost)} missing")
    for lid, status in lost[:5]:
        problem(f"progress of {lid} missing through the balancer (status {status})")

    # 2. Each class's view and CSV on every server: the same everywhere, and complete.
    by_class = {}
    for m in learners:
        by_class.setdefault(m["class"], []).append(m)
    for cls in classes:
        members = [m for m in by_class.get(cls["index"], []) if m["joined"]]
        seen = []
        for url in servers:
            t = Client(url, cls["teacher_address"])
            status, view, _, raw = t.request("GET", f"/api/class/view?code={cls['code']}", headers={"Cookie": cls["cookie"]})
            if status != 200:
                problem(f"{url}: class {cls['code']}'s view answered {status}: {raw[:200]}")
                continue
            seen.append(view)
            nicknames = sorted(l["nickname"] for l in view["learners"])
            if nicknames != sorted(m["nickname"] for m in members) or view["learner_count"] != len(members):
                problem(f"{url}: class {cls['code']} shows {len(nicknames)} learners, {len(members)} joined")
            for m in members:
                c1 = cell(view, m["nickname"], LESSON1, CHALLENGE1)
                c2 = cell(view, m["nickname"], LESSON2, QUIZ)
                if m["progress"] and not (c1 and c1["done"]):
                    problem(f"{url}: {m['nickname']} of {cls['code']}: {CHALLENGE1} acknowledged, not done in the view")
                if m["right"] and not (c2 and c2["done"]):
                    problem(f"{url}: {m['nickname']} of {cls['code']}: {QUIZ} acknowledged right, not done in the view")
                if m["answers"] and not (c2 and c2["tries"] >= 1):
                    problem(f"{url}: {m['nickname']} of {cls['code']}: answers acknowledged, no tries in the view")
            quiz = next(s for s in view["challenges"] if s["challenge"] == QUIZ)
            wrong = next((w["count"] for w in quiz["wrong_answers"] if w["answer"] == WRONG_SHOWN), 0)
            if wrong < sum(m["wrong"] for m in members):
                problem(f"{url}: class {cls['code']}: {wrong} wrong answers '{WRONG}' shown, "
                        f"{sum(m['wrong'] for m in members)} acknowledged")
            if quiz["done_count"] < sum(m["right"] for m in members):
                problem(f"{url}: class {cls['code']}: {QUIZ} done by {quiz['done_count']}, "
                        f"{sum(m['right'] for m in members)} acknowledged")
            status, _, headers, text = t.request("GET", f"/api/class/export?code={cls['code']}",
                                                 headers={"Cookie": cls["cookie"]})
            rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff")))) if status == 200 else []
            cells = sum(len(ls["challenges"]) for l in view["learners"] for ls in l["lessons"])
            done_csv = {(r["nickname"], r["lesson"], r["challenge"]) for r in rows if r["done"] == "yes"}
            done_view = {(l["nickname"], ls["lesson"], c["challenge"]) for l in view["learners"]
                         for ls in l["lessons"] for c in ls["challenges"] if c["done"]}
            if status != 200 or len(rows) != cells or done_csv != done_view:
                problem(f"{url}: class {cls['code']}'s CSV ({status}, {len(rows)} rows) does not match its view "
                        f"({cells} cells)")
        if len(seen) == len(servers) and any(v != seen[0] for v in seen):
            problem(f"class {cls['code']}: the servers show different views")
    print(f"verify: {len(classes)} classes' views and CSV read on {len(servers)} server(s)")

    # 3. The database holds at least every acknowledged answer a class keeps: those up to the
    #    learner's first pass, at most 100 (checks after a pass are not tries and are not kept;
    #    more only for one done but not answered when a server died, and retried by the balancer).
    per_learner = dict((r[0], int(r[1])) for r in db.rows(
        "SELECT learner, COUNT(*) FROM class_attempts WHERE lesson = 'trained-heads' GROUP BY learner"))
    short = [m for m in learners if per_learner.get(m["id"], 0) < min(100, m.get("counted", m["answers"]))]
    answers = sum(m["answers"] for m in learners)
    print(f"verify: {answers} acknowledged answers, {sum(per_learner.values())} answer rows in the database, "
          f"{len(short)} learners short")
    for m in short[:5]:
        problem(f"{m['id']}: {m['answers']} answers acknowledged ({m.get('counted')} before the first pass), "
                f"{per_learner.get(m['id'], 0)} in the database")

    # 4. Across servers: live feed, login, removal, deletion.
    first, other = servers[0], servers[-1]
    live = classes[0]
    someone = next((m for m in by_class.get(live["index"], []) if m["joined"]), None)
    t_first = Client(first, live["teacher_address"])
    status, view, h, _ = t_first.request("GET", f"/api/class/view?code={live['code']}", headers={"Cookie": live["cookie"]})
    etag = h.get("etag")
    status, _, _, _ = t_first.request("GET", f"/api/class/view?code={live['code']}",
                                      headers={"Cookie": live["cookie"], "If-None-Match": etag or ""})
    if status != 304:
        problem(f"{first}: an unchanged class's poll answered {status}, not 304")
    if someone:
        # A learner who has not passed the quiz yet (a check after a pass is not kept, so it
        # changes nothing to see): one joining now on the other server, answering wrong.
        learner_client = Client(other, live["classroom_address"])
        fresh = f"live-{state['tag']}-learner"
        learner_client.request("POST", "/api/class/join", {"code": live["code"], "learner": fresh, "nickname": "Live"})
        status, view, h, _ = t_first.request("GET", f"/api/class/view?code={live['code']}", headers={"Cookie": live["cookie"]})
        etag = h.get("etag")
        status, _, _, _ = learner_client.request("POST", f"/api/lessons/{LESSON2}/check",
                                                 {"learner": fresh, "challenge": QUIZ, "answer": {"choice": WRONG}})
        status, newer, h2, _ = t_first.request("GET", f"/api/class/view?code={live['code']}",
                                               headers={"Cookie": live["cookie"], "If-None-Match": etag or ""})
        if status != 200 or newer["class"]["version"] <= view["class"]["version"]:
            problem(f"{first}: the poll after an answer on {other} answered {status}, not a newer view")
        else:
            print(f"verify: live: an answer on {other} reached the teacher polling {first} "
                  f"(version {view['class']['version']} -> {newer['class']['version']})")
    # a login on one server opens the view on the other
    status, _, h, raw = Client(other, live["teacher_address"]).request(
        "POST", "/api/class/login", {"code": live["code"], "secret": live["secret"]})
    login_cookie = cookie_of(h)
    status2, _, _, _ = Client(first, live["teacher_address"]).request(
        "GET", f"/api/class/view?code={live['code']}", headers={"Cookie": login_cookie})
    if status != 200 or status2 != 200:
        problem(f"login on {other} answered {status}, its session on {first} {status2}: {raw[:200]}")
    else:
        print(f"verify: a login on {other} opened the view on {first}")
    # removal on one server: gone on the other and from every class table
    if someone:
        status, _, _, raw = Client(other, live["teacher_address"]).request(
            "POST", "/api/class/remove-learner", {"code": live["code"], "nickname": someone["nickname"]},
            headers={"Cookie": live["cookie"]})
        status2, after, _, _ = t_first.request("GET", f"/api/class/view?code={live['code']}", headers={"Cookie": live["cookie"]})
        rows = sum(db.count(f"SELECT COUNT(*) FROM {t} WHERE learner = '{someone['id']}'")
                   for t in ("class_members", "class_attempts"))
        if status != 200 or status2 != 200 or any(l["nickname"] == someone["nickname"] for l in after["learners"]) or rows:
            problem(f"removing {someone['nickname']} on {other}: {status}; on {first} still shown or {rows} rows left: {raw[:200]}")
        else:
            print(f"verify: {someone['nickname']} removed on {other}: gone from the view on {first} and from the tables")
    # deletion on one server: gone on the other, the session with it, and from every table
    if len(classes) > 1:
        gone = classes[1]
        status, _, _, raw = Client(first, gone["teacher_address"]).request(
            "POST", "/api/class/delete", {"code": gone["code"]}, headers={"Cookie": gone["cookie"]})
        status2, _, _, _ = Client(other, gone["teacher_address"]).request(
            "GET", f"/api/class/view?code={gone['code']}", headers={"Cookie": gone["cookie"]})
        status3, _, _, _ = Client(other, gone["classroom_address"]).request(
            "POST", "/api/class/join", {"code": gone["code"], "learner": f"late-{state['tag']}-learner", "nickname": "Late"})
        left = {t: db.count(f"SELECT COUNT(*) FROM {t} WHERE {'code' if t == 'classes' else 'class_code'} = '{gone['code']}'")
                for t in CLASS_TABLES}
        others = db.count(f"SELECT COUNT(*) FROM classes WHERE code <> '{gone['code']}'")
        if status != 200 or status2 != 401 or status3 != 404 or any(left.values()) or others != len(classes) - 1:
            problem(f"deleting {gone['code']} on {first}: {status}; its view on {other} {status2} (401 expected), "
                    f"a join {status3} (404 expected), rows left {left}, other classes {others}: {raw[:200]}")
        else:
            print(f"verify: class {gone['code']} deleted on {first}: its session refused on {other} (401), "
                  f"joins 404, no row of it in {', '.join(CLASS_TABLES)}; the other {others} classes kept")

    for p in problems[:20]:
        print(f"  FAILED: {p}")
    print(f"verify: {'passed' if not problems else f'{len(problems)} problem(s)'}")
    return 0 if not problems and acked else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["drive", "verify", "balancer"])
    p.add_argument("--url", default="", help="the load balancer")
    p.add_argument("--log", default="", help="balancer: nginx's access log (log_format timing)")
    p.add_argument("--learners", type=int, default=40)
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--think", type=float, default=0, help="seconds each learner waits between steps")
    p.add_argument("--teacher-poll", type=float, default=3, help="seconds between a teacher's polls (the page's 3 s)")
    p.add_argument("--state", default="")
    p.add_argument("--servers", default="", help="verify: each server's own URL, comma-separated")
    p.add_argument("--db", default="", help="verify: the database (postgresql:// URL or SQLite file)")
    p.add_argument("--psql", default="psql")
    args = p.parse_args()
    if args.mode == "balancer":
        sys.exit(balancer(args))
    if not args.url or not args.state:
        sys.exit("learners.py: --url and --state are needed")
    for url in [args.url] + [s for s in args.servers.split(",") if s]:
        host = urllib.parse.urlsplit(url).hostname
        if not (host == "localhost" or host.startswith("127.") or host == "::1"):
            sys.exit("learners.py: loopback addresses only")
    if args.mode == "drive" and not 1 <= args.classes <= min(args.learners, 4000):
        sys.exit("learners.py: --classes must be between 1 and --learners")
    sys.exit(drive(args) if args.mode == "drive" else verify(args))


if __name__ == "__main__":
    main()
