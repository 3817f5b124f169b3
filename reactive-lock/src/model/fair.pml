/*
 * The fair lock's protocol: LockScripts.ACQUIRE_FAIR, RELEASE_FAIR (a release, a hand-off to a
 * named waiter of the releaser's process, and a waiter leaving the line) and the RENEW it shares
 * with the non-fair lock, each one atomic step over the keys it touches, and the clients of
 * FairRedisStore / RedisStore / LockCore around them. See README.md; written in the style of
 * lock.pml, whose conventions (time, leases, give-ups) it keeps.
 *
 * Time is absolute ticks 0..MAXT (a bounded horizon); a key whose expiry time is reached is gone,
 * and a waiter whose deadline is reached is past its lease (the scripts' "deadline >= now" on the
 * millisecond clock, where Redis also keeps a key until its expiry time has passed). A client's
 * lease is valid while now < (when its granting command was SENT) + TTL.
 */

#ifndef NC
#define NC 2          /* clients */
#endif
#ifndef R
#define R 2           /* acquisitions per client, each with its own token */
#endif
#ifndef TTL
#define TTL 2         /* lease, ticks */
#endif
#ifndef WL
#define WL 2          /* waiter lease: a waiter must call again within it to keep its place */
#endif
#ifndef RET
#define RET 1         /* FENCE_RETENTION: the fencing record lives TTL + RET after an issue */
#endif
#ifndef MAXT
#define MAXT 3        /* the horizon: the clock stops here */
#endif

#define NT (NC * R)               /* tokens 1..NT (at most 7: g_ahead is a byte of bits); token t is client (t-1)/R's */
#define TOKEN(i, r) (1 + (i) * R + (r))
#define NEVER 255
#define NOBODY 255                /* RELEASE_FAIR without a named waiter */

/* The lock key: absent (tok 0) or a token, and its expiry. */
byte lk_tok, lk_exp;
/* The fencing record: the last token issued (0: absent) and its expiry. */
byte fr_val, fr_exp;
/* The line: the queue list (tokens in arrival order, q[0] the head) and the waiters hash (each
 * token's deadline, 0: no field); both keys get the same PEXPIRE at each registration. */
byte q[NT];
byte qn;
byte dl[NT + 1];
byte q_exp;
byte now;

/* The client side. */
#define IDLE 0
#define WAITING 1
#define HOLDING 2
byte phase[NC];
bool hold[NC];            /* the client believes it holds the lock ... */
byte vu[NC];              /* ... until this tick (its lease) */
byte handed[NC];          /* a hand-off delivered in process (RELEASE_FAIR named it): its fencing token, 0 if none */
byte handedVu[NC];
byte tok[NC];             /* each client's current token (for a named hand-off) */

/* Ghosts, for the properties. */
byte g_flast, g_fexp;     /* the last fencing token issued, and until when the spec keeps its record */
byte g_gone[NT + 1];      /* by when the lock must be free of token t (its client gave it up), NEVER if not yet */
bool g_handed;            /* the lock was handed to the first in line by a release and published: not claimed yet */
byte g_handAt;            /* when */
byte g_dl[NT + 1];        /* a waiter's lease: its last attempt ran at g_dl - WL; past it (<= now) once it stops calling */
bool g_left[NT + 1];      /* its leave (RELEASE_FAIR of a token that does not hold the lock) ran */
bool g_joined[NT + 1];    /* the acquisition joined the line (an attempt of it was turned away) */
bool g_live[NT + 1];      /* ... and is live in line: every attempt since it last joined ran within WL of the one before */
byte g_ahead[NT + 1];     /* bit u of g_ahead[w]: w was live in line when u first joined, and still is */
bool g_ended[NT + 1];     /* u's acquisition left the line (its token may still be in it, until its lease passes) */

#define VALID(i) (hold[i] && now < vu[i])

/*
 * The properties, as asserts at the only steps that can break them:
 *  mutex:   no two clients hold valid leases (checked where a lease starts or is extended);
 *  fence:   a fencing token is above the last one issued while that one's record must live (TTL + RET);
 *  fifo:    the lock is never granted or handed to an acquisition u while a waiter w is live in line
 *           that joined it before u first did (or before u's grant, if u never joined);
 *  lapse:   a waiter past its lease (it stopped calling) is never handed the lock and never makes
 *           another attempt wait: an attempt that finds the lock free waits only behind a live head;
 *  leave:   the same for a waiter that left (its RELEASE_FAIR ran): it is out of the line at once;
 *  handoff: a lock handed to the first in line and not claimed is gone within WL of the hand-off;
 *  ttl:     a granted or claimed lock is free of a token within TTL of its client giving it up.
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
inline fifoOk(u) {
  ci = 1;
  do
  :: ci <= NT -> assert(ci == u || !g_live[ci] || (g_joined[u] && (g_ahead[ci] & (1 << u)) == 0)); ci++   /* fifo */
  :: else -> break
  od;
  ci = 0
}
/* The acquisition of token u ends (granted, claimed, handed in process, or it left): it is out of the ghosts. */
inline ghostDone(u) {
  g_joined[u] = 0; g_live[u] = 0; g_ahead[u] = 0;
  ci = 1;
  do :: ci <= NT -> g_ahead[ci] = g_ahead[ci] & ~(1 << u); ci++ :: else -> break od;
  ci = 0
}
/* The acquisition of token u left the line (cancelled, timed out): no longer live in line, but as
 * long as its token may be in the line (its leave may be lost) its place stays on record. */
inline ghostLeave(u) {
  g_live[u] = 0; g_ahead[u] = 0; g_ended[u] = 1
}
/* An attempt of token u was turned away: it joins the line unless it is live in it. */
inline ghostJoin(u) {
  if
  :: !g_live[u] ->
     if
     :: !g_joined[u] ->
        ci = 1;
        do :: ci <= NT -> if :: g_live[ci] -> g_ahead[ci] = g_ahead[ci] | (1 << u) :: else fi; ci++ :: else -> break od;
        ci = 0; g_joined[u] = 1
     :: else
     fi;
     g_live[u] = 1
  :: else
  fi
}
#define HANDOFF_OK (lk_tok == 0 || !g_handed || now < g_handAt + WL)
#define TTL_OK (lk_tok == 0 || g_handed || now < g_gone[lk_tok])

inline delLock() { lk_tok = 0; lk_exp = 0; g_handed = 0; g_handAt = 0 }

/* LPOP; and LREM 1 of token tk. */
byte qi;
inline lpop() {
  qi = 1;
  do :: qi < qn -> q[qi - 1] = q[qi]; qi++ :: else -> break od;
  qn--; q[qn] = 0; qi = 0
}
inline lrem(tk) {
  qi = 0;
  do :: qi < qn && q[qi] != tk -> qi++ :: else -> break od;
  if
  :: qi < qn ->
     do :: qi + 1 < qn -> q[qi] = q[qi + 1]; qi++ :: else -> break od;
     qn--; q[qn] = 0
  :: else
  fi;
  qi = 0
}

/* nextFence: the server clock (now + 1), or one above the record while it lives (as in lock.pml). */
byte fc;
inline nextFence(res) {
  fc = now + 1;
  if :: fr_val != 0 && fr_val >= fc -> fc = fr_val + 1 :: else fi;
  fr_val = fc; fr_exp = now + TTL + RET;
  assert(now >= g_fexp || fc > g_flast);                            /* fence */
  g_flast = fc; g_fexp = now + TTL + RET;
  res = fc; fc = 0
}

/* @script LockScripts.ACQUIRE_FAIR sha1=87790184f0c1650f88ef7d05a2e450a6c5a7c193
 * res: the fencing token, or 0 (queued, or its place refreshed). */
byte hd;
inline ACQUIRE_FAIR(tk, res) {
  atomic {
    g_dl[tk] = now + WL;                            /* ghost: the waiter called */
#ifndef BUG_NO_DROP
    do                                              /* drops the heads past their deadline */
    :: qn > 0 && dl[q[0]] <= now -> dl[q[0]] = 0; lpop()
    :: else -> break
    od;
#endif
    if :: qn > 0 -> hd = q[0] :: else -> hd = 0 fi;
    /* the script's if / elseif / else: each guard excludes the ones before it */
#ifdef BUG_CLAIM_NO_TOKEN_CHECK
#define OURS (lk_tok != 0)                          /* seeded: any holder's lock is "ours" */
#else
#define OURS (lk_tok == tk)
#endif
#ifdef BUG_GRANT_IGNORES_LINE
#define WAITS (lk_tok != 0)                         /* seeded: a free lock goes to whoever asks */
#else
#define WAITS (lk_tok != 0 || (hd != 0 && hd != tk))
#endif
    if
    :: OURS ->                                      /* a retry, or the claim of a lock handed to it */
       lk_exp = now + TTL; g_handed = 0; g_handAt = 0;
       fifoOk(tk);
       if :: fr_val != 0 -> res = fr_val; fr_exp = now + TTL + RET   /* kept for its own lease */
          :: else -> nextFence(res) fi
    :: !OURS && WAITS ->                            /* busy, or not its turn: queues */
       assert(lk_tok != 0 || g_dl[hd] > now);                         /* lapse */
       assert(lk_tok != 0 || !g_left[hd]);                            /* leave */
#ifdef BUG_REQUEUE
       if :: dl[tk] != 0 -> lrem(tk) :: else fi;    /* seeded: a refresh goes to the back */
       q[qn] = tk; qn++;
#else
#ifdef LAPSED_TO_BACK
       assert(dl[tk] == 0 || dl[tk] > now || q[qn - 1] == tk);  /* not a property (README): a lapsed waiter not dropped keeps its place */
#endif
       if :: dl[tk] == 0 -> q[qn] = tk; qn++ :: else fi;   /* HSET returned 1: RPUSH */
#endif
       dl[tk] = now + WL; q_exp = now + WL;
       ghostJoin(tk);
       res = 0
    :: !OURS && !WAITS ->                           /* free, and nobody live ahead of it */
       fifoOk(tk);
       lk_tok = tk; lk_exp = now + TTL;
       if :: hd != 0 -> lpop(); dl[tk] = 0 :: else fi;
       nextFence(res)
    fi;
    hd = 0
  }
}

/* @script LockScripts.RELEASE_FAIR sha1=37d2d26eba9557c5a8a8409407322885f9674e42
 * j: the waiting client named (NOBODY: none), sent: when the release was sent. res: 3 handed to
 * the named waiter (the fencing token goes back to the releaser, modelled as res 3), 2 handed to
 * the first in line and published, 1 released with nobody live in line, 0 not its (it left the line). */
byte nx;
inline RELEASE_FAIR(tk, j, sent, res) {
  atomic {
    if
    :: lk_tok != tk ->                              /* not its: leaves the line */
#ifndef BUG_LEAVE_NOT_REMOVED
       if :: dl[tk] != 0 -> dl[tk] = 0; lrem(tk) :: else fi;
#endif
       if :: g_dl[tk] > now -> g_left[tk] = 1 :: else fi;          /* ghost: it left while in its lease */
       res = 0
    :: else ->
       res = 1;
#ifdef NO_HANDOFF
       nx = 0;                                      /* a variant, not a bug (README): DEL, the line left to its next attempts */
#else
       do
       :: qn > 0 ->
#ifdef BUG_RELEASE_TO_LAST
          nx = q[qn - 1]; qn--; q[qn] = 0;          /* seeded: the newest waiter first */
#else
#ifdef BUG_NAMED_FIRST
          if                                        /* seeded: the named waiter of its process first */
          :: j != NOBODY && dl[tok[j]] > now -> nx = tok[j]; lrem(nx)
          :: else -> nx = q[0]; lpop()
          fi;
#else
          nx = q[0]; lpop();
#endif
#endif
#ifdef BUG_RELEASE_NO_DEADLINE
          if :: dl[nx] != 0 -> dl[nx] = 0; break :: else fi   /* seeded: the first in line, live or not */
#else
          if :: dl[nx] > now -> dl[nx] = 0; break :: else -> dl[nx] = 0 fi
#endif
       :: else -> nx = 0; break
       od;
#endif
       if
       :: nx != 0 ->
          assert(g_dl[nx] > now);                                   /* lapse */
          assert(!g_left[nx]);                                      /* leave */
          fifoOk(nx);
          lk_tok = nx;
          if
          :: j != NOBODY && nx == tok[j] && phase[j] == WAITING && handed[j] == 0 ->
             lk_exp = now + TTL; g_handed = 0; g_handAt = 0;
             nextFence(res);
             if
             :: handed[j] = res; handedVu[j] = sent + TTL       /* delivered in process */
             :: skip                                          /* the reply is lost: its next attempt claims it */
             fi;
             res = 3
          :: else ->
#ifdef BUG_HANDOFF_FOR_TTL
             lk_exp = now + TTL;                                    /* seeded: the waiter's ttl, not one waiter lease */
#else
             lk_exp = now + WL;
#endif
             g_handed = 1; g_handAt = now;
             nextFence(res); res = 2                                  /* PUBLISH: lossy, so no state */
          fi
       :: else -> delLock()
       fi
    fi;
    nx = 0
  }
}

/* @script LockScripts.RENEW sha1=0d1ade3c14f13cbad24ec7b251144812731a1216 (shared with lock.pml)
 * 1 if the token holds the lock. */
inline RENEW(tk, res) {
  atomic {
    if :: lk_tok == tk -> lk_exp = now + TTL; res = 1 :: else -> res = 0 fi
  }
}

/* Gives up token t: the lock must be free of it within TTL (LockCore releases by token). */
#define GIVE_UP(t) g_gone[t] = now + TTL

proctype Client(byte i) {
  byte r, t, sent, res, j;
  r = 0;
next:
  if
  :: r == R -> goto done
  :: else
  fi;
  t = TOKEN(i, r); r++;
  tok[i] = t;
  sent = now;                           /* always the script: a SET NX would go ahead of the line */
attempt:
  ACQUIRE_FAIR(t, res);
  if
  :: res -> atomic { ghostDone(t); g_dl[t] = 0; handed[i] = 0; handedVu[i] = 0 }; goto granted
  :: else -> sent = 0
  fi;
  phase[i] = WAITING;
  do
  /* LockCore takes a hand-off delivered in process while its lease is fresh (at least TTL less one
   * renewal interval left; here: still valid); an older one is left to an ordinary attempt, which
   * takes back a lock handed to its token. */
  :: atomic { handed[i] && now < handedVu[i] -> phase[i] = HOLDING; hold[i] = 1; vu[i] = handedVu[i]; handed[i] = 0; handedVu[i] = 0;
              ghostDone(t); g_dl[t] = 0; mutexOk(i) }; goto held
  :: phase[i] = IDLE; sent = now; goto attempt     /* a notice with its token, or its step (WL / 2) ended */
  :: atomic { phase[i] = IDLE; ghostLeave(t) }; goto cancel  /* leaves (cancelled, timed out) */
  od;
granted:
  atomic { phase[i] = HOLDING; hold[i] = 1; vu[i] = sent + TTL; sent = 0; res = 0; mutexOk(i) };
held:
  do
  :: sent = now;                        /* renewal */
     RENEW(t, res);
     if
     :: res -> atomic { vu[i] = sent + TTL; sent = 0; res = 0; mutexOk(i) }
     :: else -> hold[i] = 0; goto cancel  /* lost: released by token */
     fi
  :: atomic { hold[i] = 0; sent = now; GIVE_UP(t); phase[i] = IDLE };   /* releases, naming a waiter of its process */
     j = 0;
     do
     :: j < NC - 1 -> j++
     :: break
     od;
     j = (i + 1 + j) % NC;
     RELEASE_FAIR(t, j, sent, res);
     atomic { j = 0; sent = 0; res = 0 };
     goto next
  :: hold[i] = 0; goto cancel           /* releases (the body ended, was cancelled, or it crashed) */
  od;
cancel:
  atomic { hold[i] = 0; phase[i] = IDLE; handed[i] = 0; handedVu[i] = 0; sent = 0; res = 0; GIVE_UP(t) };
  if
  :: RELEASE_FAIR(t, NOBODY, 0, res)    /* LockCore's release, or releaseAbandoned of a waiter that leaves */
  :: skip                               /* lost, or the client crashed */
  fi;
  res = 0;
  goto next;
done:
  skip
}

/* Redis's clock: each tick expires the keys whose time has come. */
active proctype Clock() {
  byte i;
end:
  do
  :: atomic {
       now < MAXT ->
       now++;
       if :: lk_tok != 0 && lk_exp <= now -> delLock() :: else fi;
       if :: fr_val != 0 && fr_exp <= now -> fr_val = 0; fr_exp = 0 :: else fi;
       if
       :: qn > 0 && q_exp <= now ->
          i = 0; do :: i < NT -> q[i] = 0; i++ :: else -> break od;
          i = 1; do :: i <= NT -> dl[i] = 0; i++ :: else -> break od;
          qn = 0; q_exp = 0
       :: else
       fi;
       assert(HANDOFF_OK);                                       /* handoff (g_handAt) */
       assert(TTL_OK);                                           /* ttl */
       /* a waiter past its lease is no longer live in line; forget what no longer matters */
       i = 1;
       do
       :: i <= NT ->
          if :: g_dl[i] != 0 && g_dl[i] <= now -> g_dl[i] = 0; g_left[i] = 0 :: else fi;
          if
          :: g_live[i] && g_dl[i] == 0 ->
             g_live[i] = 0; g_ahead[i] = 0
          :: else
          fi;
          if
          :: g_ended[i] && g_dl[i] == 0 ->                 /* a waiter that left, past its lease: out of the line */
             g_ended[i] = 0; g_joined[i] = 0;
             ci = 1;
             do :: ci <= NT -> g_ahead[ci] = g_ahead[ci] & ~(1 << i); ci++ :: else -> break od;
             ci = 0
          :: else
          fi;
          if :: g_gone[i] != NEVER && g_gone[i] <= now -> g_gone[i] = 0 :: else fi;
          i++
       :: else -> break
       od;
       if :: g_fexp <= now -> g_fexp = 0; g_flast = 0 :: else fi;
       i = 0;
       do
       :: i < NC ->
          if :: vu[i] <= now -> vu[i] = 0 :: else fi;
          if :: handed[i] && handedVu[i] <= now -> handed[i] = 0; handedVu[i] = 0 :: else fi;
          i++
       :: else -> break
       od;
       i = 0
     }
  od
}

init {
  byte i;
  atomic {
    i = 1;
    do :: i <= NT -> g_gone[i] = NEVER; i++ :: else -> break od;
    i = 0;
    do :: i < NC -> run Client(i); i++ :: else -> break od
  }
}
