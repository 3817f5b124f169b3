/*
 * The Redlock client's protocol: RedlockStore's acquire, renew and release rounds over NN = 3
 * independent nodes, each node running LockScripts.ACQUIRE, RENEW and RELEASE on its own key as
 * Redlock sends them (the lock key and its fencing record, no sleepers: so no mark, no kept lock, no
 * notice), and the clients of LockCore / Watchdog around them. See README.md.
 *
 * Time is absolute ticks 0..MAXT; a key whose expiry time is reached is gone. A command a client
 * sends to a node waits on that client's connection to that node until the node runs it, as one
 * atomic step, at any later moment or never: run by the node timeout (sent + NTO) while its round is
 * open, its answer counts there; run later, its answer is ignored (a slow or frozen node still runs
 * it); never run, it is lost (the node is down, the connection broke, the client crashed). A
 * connection holds one command: one sent while the last has not run yet is lost (a bound of the
 * model; Lettuce would queue it, and the node run it after, in order). A node counts a key's PX TTL
 * from when the script RAN, by its own clock; node 0's clock runs fast by the drift allowance D, so
 * its keys expire D ticks early. A client's lease is valid while now < (when its granting or
 * renewing round was SENT) + TTL - D, as LockCore counts a grant's validity (RedlockStore.open:
 * ttl - drift) and RedlockStore.renew an extension.
 */

#ifndef NC
#define NC 2          /* clients */
#endif
#ifndef R
#define R 1           /* acquisitions per client, each with its own token */
#endif
#ifndef TTL
#define TTL 3         /* lease (PX), ticks */
#endif
#ifndef D
#define D 1           /* the drift allowance (ttl x clockDriftFactor + 2 ms): how early a fast node's key may expire */
#endif
#ifndef NTO
#define NTO 1         /* the node timeout: an answer counts if the node ran the command by sent + NTO */
#endif
#ifndef FASTN
#define FASTN 1       /* nodes 0..FASTN-1 have a clock that runs fast by the drift allowance: their keys expire D early */
#endif
#ifndef ATT0
#define ATT0 2        /* client 0's attempts per acquisition (an attempt and its retry) */
#endif
#ifndef RNW0
#define RNW0 2        /* client 0's renewal rounds per lease (a renewal and its retry) */
#endif
#ifndef ATT1
#define ATT1 2        /* client 1's attempts per acquisition (an attempt and its retry) */
#endif
#ifndef RNW1
#define RNW1 0        /* client 1's renewal rounds per lease */
#endif
#define ATT(i) ((i) == 0 -> ATT0 : ATT1)
#define RNW(i) ((i) == 0 -> RNW0 : RNW1)
#ifndef MAXT
#define MAXT 3        /* the horizon: the clock stops here */
#endif

#define NN 3                      /* nodes */
#ifdef BUG_MINORITY
#define Q (NN / 2)                /* seeded: the quorum N/2, not N/2 + 1 */
#else
#define Q (NN / 2 + 1)            /* RedlockStore: nodes.size() / 2 + 1 */
#endif
#ifdef BUG_NO_DRIFT
#define V TTL                     /* seeded: the validity is the ttl, no drift allowance */
#else
#define V (TTL - D)               /* RedlockStore.open: validForNanos = ttl - drift */
#endif
/* RedlockStore.checkTtl: the ttl must exceed the node timeout plus the drift allowance. */
#if TTL <= NTO + D
#error "TTL must exceed NTO + D (RedlockStore.checkTtl)"
#endif

#define NT (NC * R)               /* tokens 1..NT; token t is client (t-1)/R's */
#define TOKEN(i, r) (1 + (i) * R + (r))

/* The nodes: each one's lock key, absent (0) or a token, and its expiry. */
byte lk[NN], lexp[NN];
byte now;
#ifdef RESTART
byte restarted;           /* 1 + the node that restarted empty (once), 0 if none */
byte upAt;                /* with -DDOWN_FOR_TTL: it runs no command before this tick */
#endif

/*
 * The connections: one per client and node, holding at most one command (QL = 1) not yet run:
 * its kind, its token, and whether it belongs to its client's open round (then its answer counts
 * there). A command sent while the connection still holds one is lost, as is one its node never runs.
 */
#define ACQ 1
#define REN 2
#define REL 3
#define QX(i, n) ((i) * NN + (n))
#define ENTRY(kind, tk, inr) ((kind) + 4 * (tk) + 32 * (inr))
#define KIND(e) ((e) % 4)
#define TOK(e) (((e) / 4) % 8)
#define INR(e) ((e) / 32)
byte q[NC * NN];          /* 0: empty */

/* The client side. */
byte cur[NC];             /* the token of the client's current acquisition (0: none yet) ... */
bool ended[NC];           /* ... and whether it has ended (LockCore's DONE: a late grant for it is released) */
byte natt[NC];            /* the attempts of the acquisition, or the renewal rounds of the lease, so far */
bool hold[NC];            /* the client believes it holds the lock ... */
byte vu[NC];              /* ... until this tick (its lease) */
/* Each client's round (RedlockStore.collect): open, its kind, when it was sent, the yes and no counted. */
bool ropen[NC];
byte rkind[NC], rsent[NC], ry[NC], rn[NC];

#define VALID(i) (hold[i] && now < vu[i])

/*
 * The property, as an assert at the only steps that can break it (where a lease starts or is
 * extended, so no never claim is needed):
 *  mutex: no two clients hold valid leases.
 */
byte ci;
inline mutexOk(i) {
  ci = 0;
  do
  :: ci < NC -> assert(ci == i || !VALID(ci) || !VALID(i)); ci++    /* mutex */
  :: else -> break
  od;
  ci = 0
}

#ifdef BUG_VALIDITY_FROM_REPLY
#define GRANT_FROM now            /* seeded: a grant's validity counted from when the majority answered */
#else
#define GRANT_FROM rsent[i]
#endif
#ifdef BUG_RENEW_FROM_REPLY
#define RENEW_FROM now            /* seeded: the renewed lease counted from the reply */
#else
#define RENEW_FROM rsent[i]
#endif

byte cn;                  /* scratch (d_step only) */
/* Sends command e to every node on client i's connections (lost where one is still busy). */
inline sendAll(i, e) {
  cn = 0;
  do
  :: cn < NN -> if :: q[QX(i, cn)] == 0 -> q[QX(i, cn)] = e :: else fi; cn++
  :: else -> break
  od;
  cn = 0
}
/* Client i's new round of kind (ACQ, REN, or REL after a refusal) for its token, sent to every node now. */
inline openRound(i, kind) {
  ropen[i] = 1; rkind[i] = kind; rsent[i] = now; ry[i] = 0; rn[i] = 0;
  sendAll(i, ENTRY(kind, cur[i], 1))
}
/* Client i's round stops counting: its commands not run yet will be answered late (ignored). */
inline stopRound(i) {
  cn = 0;
  do
  :: cn < NN -> if :: INR(q[QX(i, cn)]) -> q[QX(i, cn)] = q[QX(i, cn)] - 32 :: else fi; cn++
  :: else -> break
  od;
  ropen[i] = 0; rsent[i] = 0; ry[i] = 0; rn[i] = 0; cn = 0
}
/*
 * Client i's round ends (it has enough, or its node timeout passed) and its outcome is handled at
 * once (RedlockStore's flatMap, then LockCore.ended or the watchdog). An acquire round with a
 * majority is a lease valid until sent + TTL - D (if that is still ahead: LockCore.ended); one
 * without is released on every node (RedlockStore.acquire: before the refusal). A renewal with a
 * majority extends the lease to sent + TTL - D; one without leaves it as it is (the watchdog tries
 * again while it lasts, or the lease is lost).
 */
inline endRound(i) {
  if
  :: rkind[i] == ACQ && ry[i] >= Q && GRANT_FROM + V > now ->
     hold[i] = 1; vu[i] = GRANT_FROM + V; natt[i] = 0; mutexOk(i)
  :: rkind[i] == ACQ && ry[i] >= Q && GRANT_FROM + V <= now   /* the grant came after its validity: the next attempt retakes it */
  :: rkind[i] == ACQ && ry[i] < Q              /* refused */
  :: rkind[i] == REN && ry[i] >= Q -> vu[i] = RENEW_FROM + V; mutexOk(i)
  :: rkind[i] == REN && ry[i] < Q
  :: rkind[i] == REL                          /* a majority answered the release, or its node timeout passed */
  fi;
  if
  :: rkind[i] == ACQ && ry[i] < Q ->
     stopRound(i); openRound(i, REL)          /* refused: released on every node, the refusal once a majority answered */
  :: else -> stopRound(i); rkind[i] = 0
  fi
}
/* Counts one node's answer (res: a yes) in client i's open round; ends the round once it has
   enough (RedlockStore.collect): a majority of yes, every node's answer, or (acquire) the no's
   alone ruling a majority out; a release round, a majority of answers (Round.majorityAnswered). */
inline count(i, res) {
  if :: res -> ry[i]++ :: else -> rn[i]++ fi;
  if
  :: rkind[i] != REL && (ry[i] >= Q || ry[i] + rn[i] == NN || (rkind[i] == ACQ && rn[i] > NN - Q)) -> endRound(i)
  :: rkind[i] == REL && ry[i] + rn[i] >= Q -> endRound(i)
  :: else
  fi
}

/*
 * Nodes 1 and 2 are alike (both keep time, their connections alike): two states that differ only by
 * a swap of the two are one state, and canon() keeps the one whose node 1 sorts first. It ends
 * every step that changes a node or a connection (symmetry reduction by hand: it halves the states;
 * a counterexample's nodes 1 and 2 may trade names between steps). Off for -DFASTN=2 or -DNC=3.
 */
#if FASTN != 2 && NC == 2
#define NODE_GT(a, b) (lk[a] > lk[b] || (lk[a] == lk[b] && (lexp[a] > lexp[b] || (lexp[a] == lexp[b] \
  && (q[QX(0, a)] > q[QX(0, b)] || (q[QX(0, a)] == q[QX(0, b)] && q[QX(1, a)] > q[QX(1, b)]))))))
byte sw;
inline canon() {
  if
  :: NODE_GT(1, 2) ->
     sw = 12;                                  /* (a counterexample shows this step: nodes 1 and 2 trade names) */
     sw = lk[1]; lk[1] = lk[2]; lk[2] = sw;
     sw = lexp[1]; lexp[1] = lexp[2]; lexp[2] = sw;
     sw = q[QX(0, 1)]; q[QX(0, 1)] = q[QX(0, 2)]; q[QX(0, 2)] = sw;
     sw = q[QX(1, 1)]; q[QX(1, 1)] = q[QX(1, 2)]; q[QX(1, 2)] = sw;
#ifdef RESTART
     if :: restarted == 2 -> restarted = 3 :: restarted == 3 -> restarted = 2 :: else fi;
#endif
     sw = 0
  :: else
  fi
}
#else
inline canon() { skip }
#endif

byte ne, nt, nres;        /* scratch (d_step only) */
/* How long a key that node n writes with PX TTL lives: TTL, or TTL - D where the node's clock runs fast. */
#define PX(n) (TTL - ((n) < FASTN -> D : 0))
/*
 * Node n runs the command on client i's connection. The scripts, as they act on one node without
 * sleepers:
 * @script LockScripts.ACQUIRE sha1=f4dacf56feeb4dcd470ccfabe17db87706295d0c
 *   SET NX PX ttl, or, held by the token itself (an earlier attempt's grant), PEXPIRE ttl: a yes
 *   (the fencing token, which Redlock ignores); held by another token: 0.
 * @script LockScripts.RENEW sha1=0d1ade3c14f13cbad24ec7b251144812731a1216
 *   PEXPIRE ttl if the token holds the key: 1, else 0.
 * @script LockScripts.RELEASE sha1=94efa9ead3cdf9a1912de982f7d57565056de73e
 *   (without sleepers) DEL if the token holds the key: 1, else 0.
 * An answer of the client's open round counts there; a grant answered late, for an acquisition that
 * has ended, is released on that node (RedlockStore.acquire's whenComplete).
 */
inline nodeStep(i, n) {
  ne = q[QX(i, n)]; q[QX(i, n)] = 0; nt = TOK(ne);
  if
  :: KIND(ne) == ACQ ->
     if
     :: lk[n] == 0 || lk[n] == nt -> lk[n] = nt; lexp[n] = now + PX(n); nres = 1
     :: else -> nres = 0
     fi
  :: KIND(ne) == REN ->
     if
     :: lk[n] == nt -> lexp[n] = now + PX(n); nres = 1
     :: else -> nres = 0
     fi
  :: KIND(ne) == REL ->
#ifdef BUG_RELEASE_NO_TOKEN_CHECK
     if
     :: lk[n] != 0 -> lk[n] = 0; lexp[n] = 0; nres = 1                 /* seeded: no compare */
#else
     if
     :: lk[n] == nt -> lk[n] = 0; lexp[n] = 0; nres = 1
#endif
     :: else -> nres = 0
     fi
  fi;
  if
  :: INR(ne) -> count(i, nres)
  :: !INR(ne) && KIND(ne) == ACQ && nres && (cur[i] != nt || ended[i]) ->
     q[QX(i, n)] = ENTRY(REL, nt, 0)          /* a late grant for an ended acquisition: released there */
  :: else
  fi;
  ne = 0; nt = 0; nres = 0
}
#ifdef RESTART
#define UP(n) (restarted != 1 + (n) || now >= upAt)
#else
#define UP(n) 1
#endif
/* Connection (i, n): node n runs its command, at any time after it was sent, or never. */
#define CONN(i, n) :: d_step { q[QX(i, n)] != 0 && UP(n) -> nodeStep(i, n); canon() }
#ifdef RESTART
/* Node n restarts without persistence: its key is gone; with -DDOWN_FOR_TTL it runs nothing for TTL. */
#ifdef DOWN_FOR_TTL
#define RESTART_NODE(n) :: d_step { restarted == 0 -> restarted = 1 + (n); lk[n] = 0; lexp[n] = 0; upAt = now + TTL; canon() }
#else
#define RESTART_NODE(n) :: d_step { restarted == 0 -> restarted = 1 + (n); lk[n] = 0; lexp[n] = 0; canon() }
#endif
#endif

/* The nodes: each runs the command of any of its connections at any time, or never. */
proctype Nodes() {
end:
  do
  CONN(0, 0)
  CONN(0, 1)
  CONN(0, 2)
  CONN(1, 0)
  CONN(1, 1)
  CONN(1, 2)
#if NC > 2
  CONN(2, 0)
  CONN(2, 1)
  CONN(2, 2)
#endif
#ifdef RESTART
  RESTART_NODE(0)
  RESTART_NODE(1)
  RESTART_NODE(2)
#endif
  od
}

/* The clock: each tick expires the keys whose time has come and ends the rounds past their node timeout. */
byte ck;
active proctype Clock() {
end:
  do
  :: d_step {
       now < MAXT ->
       now++;
       ck = 0;
       do
       :: ck < NN -> if :: lk[ck] != 0 && lexp[ck] <= now -> lk[ck] = 0; lexp[ck] = 0 :: else fi; ck++
       :: else -> break
       od;
       ck = 0;
       do
       :: ck < NC ->
          if :: ropen[ck] && now > rsent[ck] + NTO -> endRound(ck) :: else fi;
          /* forget what no longer matters, so that equal futures are one state */
          if :: vu[ck] <= now -> vu[ck] = 0 :: else fi;
          ck++
       :: else -> break
       od;
       ck = 0; canon()
     }
  od
}

/*
 * A client (LockCore over RedlockStore): acquisitions one after another, each with its own token.
 * An attempt is a round of ACQUIRE on every node (its outcome: endRound). After a refusal (and its
 * release round) comes another attempt (its backoff step ended) or the end of the acquisition (its
 * acquire timeout, or cancelled), which releases on every node again (LockCore.finish). A holder
 * renews (a round of RENEW, while its lease lasts) and gives the lock up at any point: the body
 * ended, was cancelled or failed, the lease was lost, or the client crashed (then its releases
 * never run). An acquisition may also be cancelled while a round of it is out. Nothing forces a
 * client to run: it may pause for any time. Up to ATT(i) attempts per acquisition and RNW(i)
 * renewal rounds per lease (bounds of the model).
 */
#define GIVE_UP(i) stopRound(i); rkind[i] = 0; hold[i] = 0; vu[i] = 0; ended[i] = 1; natt[i] = 0; sendAll(i, ENTRY(REL, cur[i], 0))
proctype Client(byte i) {
  byte r;
  do
  :: d_step { ended[i] && r < R -> cur[i] = TOKEN(i, r); r++; ended[i] = 0; natt[i] = 1; openRound(i, ACQ); canon() }
  :: ended[i] && r == R -> break
  :: d_step { !ended[i] && !hold[i] && !ropen[i] && natt[i] < ATT(i) -> natt[i]++; openRound(i, ACQ); canon() }   /* its backoff step ended */
  :: d_step { !ended[i] && !hold[i] -> GIVE_UP(i); canon() }       /* its acquire timeout, or cancelled (also with a round out) */
  :: d_step { hold[i] && !ropen[i] && now < vu[i] && natt[i] < RNW(i) -> natt[i]++; openRound(i, REN); canon() }
  :: d_step { hold[i] -> GIVE_UP(i); canon() }                      /* gives it up (also with a renewal out) */
  od
}

/* The clients, then the nodes (the search tries the process started last first: the nodes' answers
   before the clients' next steps, and those before the clock's tick). */
init {
  byte i;
  atomic {
    i = 0;
    do :: i < NC -> ended[i] = 1; run Client(i); i++ :: else -> break od;
    run Nodes()
  }
}
