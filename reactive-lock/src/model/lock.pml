/*
 * The single lock's protocol (non-fair, with release notices): LockScripts.ACQUIRE, RELEASE,
 * RENEW, HAND_OVER and the plain SET NX PX of RedisStore.acquire, each one atomic step over the
 * keys it touches, and the clients of RedisStore / LockCore around them. See README.md.
 *
 * Time is absolute ticks 0..MAXT (a bounded horizon); a key whose expiry time is reached is gone.
 * A client's lease is valid while now < (when its granting command was SENT) + TTL, as LockCore
 * counts it; Redis counts the key's TTL from when the script RAN, at or after that.
 */

#ifndef NC
#define NC 2          /* clients */
#endif
#ifndef R
#define R 1           /* acquisitions per client, each with its own token */
#endif
#ifndef TTL
#define TTL 2         /* lease, ticks */
#endif
#ifndef GRACE
#define GRACE 1       /* how long a release keeps the lock for the sleeper it wakes */
#endif
#ifndef WL
#define WL 2          /* waiter lease: how long the sleepers key lives after a registration */
#endif
#ifndef RET
#define RET 1         /* FENCE_RETENTION: the fencing record lives TTL + RET after an issue */
#endif
#ifndef MAXT
#define MAXT 4        /* the horizon: the clock stops here */
#endif

#define NT (NC * R)               /* tokens 1..NT; token t is client (t-1)/R's */
#define TOKEN(i, r) (1 + (i) * R + (r))
#define OWNER(t) (((t) - 1) / R)
#define NEVER 255

/* The lock key: absent (tok 0), "tok", "tok+" (sleepers mark) or "~tok" (kept for tok). */
#define PLAIN 0
#define MARKED 1
#define KEPT 2
byte lk_tok, lk_kind, lk_exp;
/* The fencing record: the last token issued (0: absent) and its expiry. */
byte fr_val, fr_exp;
/* The sleepers (a sorted set): member t's score is its acquisition's start + 1 (0: not a member). */
byte slp[NT + 1];
byte slp_exp;
byte now;
byte back;                /* the server clock stepped back this much (once, a failover or NTP step) */

/* The client side. */
#define IDLE 0
#define WAITING 1
#define HOLDING 2
byte phase[NC];
bool hold[NC];            /* the client believes it holds the lock ... */
byte vu[NC];              /* ... until this tick (its lease) */
byte handed[NC];          /* HAND_OVER's grant to a waiting client: its fencing token, 0 if none */
byte handedVu[NC];

/* Ghosts, for the properties. */
byte g_flast, g_fexp;     /* the last fencing token issued, and until when the spec keeps its record */
byte g_epoch;             /* bumped whenever the lock key is created */
byte g_reg[NT + 1];       /* the epoch in which each sleeper last registered */
byte g_keptAt;            /* when the lock was last kept for a sleeper */
byte g_gone[NT + 1];      /* by when the lock must be free of token t (its client gave it up), NEVER if not yet */

#define VALID(i) (hold[i] && now < vu[i])

/*
 * The properties, as asserts at the only steps that can break them (so no never claim is needed):
 *  mutex:    no two clients hold valid leases (checked where a lease starts or is extended);
 *  fence:    a fencing token is above the last one issued while that one's record must live (TTL + RET);
 *  sleepers: a release never deletes the lock while a sleeper registered under it is left;
 *  grace:    a lock kept for a sleeper is claimed or gone within GRACE;
 *  ttl:      a lock is free of a token within TTL of its client giving it up (released, cancelled, crashed).
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
#define GRACE_OK (lk_tok == 0 || lk_kind != KEPT || now < g_keptAt + GRACE)
#define TTL_OK (lk_tok == 0 || lk_kind == KEPT || now < g_gone[lk_tok])

inline delLock() { lk_tok = 0; lk_kind = PLAIN; lk_exp = 0; g_keptAt = 0 }
inline newLock(tk, kind, ttl) {
  if :: lk_tok == 0 -> g_epoch++ :: else fi;
  lk_tok = tk; lk_kind = kind; lk_exp = now + ttl
}
inline zrem(tk) { slp[tk] = 0; g_reg[tk] = 0 }
byte zc;                  /* scratch (atomic steps only) */
byte zm;
inline zcard() {
  zc = 0; zm = 1;
  do :: zm <= NT -> if :: slp[zm] -> zc++ :: else fi; zm++ :: else -> break od
}
/* ZPOPMIN: the lowest score, ties to the lower token; into zm (0: empty). */
byte zbest;
inline zpopmin() {
  zbest = 0; zm = 1;
  do
  :: zm <= NT -> if :: slp[zm] && (zbest == 0 || slp[zm] < slp[zbest]) -> zbest = zm :: else fi; zm++
  :: else -> break
  od;
  zm = zbest; zbest = 0;
  if :: zm -> slp[zm] = 0; g_reg[zm] = 0 :: else fi
}
/* PUBLISH on the channel of the sleeper's client (its token's address), lossy: the notice
   reaches the sleeper's process or is lost. */
inline publish(tk) {
  skip
}

/* nextFence: the server clock (now + 1 - back), or one above the record while it lives. */
byte fc;
inline nextFence(res) {
  fc = now + 1 - back;
#ifdef BUG_FENCE_NO_INCREMENT
  if :: fr_val != 0 && fr_val >= fc -> fc = fr_val :: else fi;     /* seeded: "last" instead of "last + 1" */
#else
  if :: fr_val != 0 && fr_val >= fc -> fc = fr_val + 1 :: else fi;
#endif
  fr_val = fc;
#ifdef BUG_FENCE_RETENTION_TTL
  fr_exp = now + TTL;                                               /* seeded: FENCE_RETENTION = 0 */
#else
  fr_exp = now + TTL + RET;
#endif
  assert(now >= g_fexp || fc > g_flast);                            /* fence */
  g_flast = fc; g_fexp = now + TTL + RET;
  res = fc; fc = 0
}

/* markSleepers: a holder's token gets "+" unless it has it; a kept lock does not. */
inline markSleepers() {
#ifdef BUG_NO_SLEEPERS_MARK
  skip                                                              /* seeded: no mark */
#else
  if :: lk_kind == PLAIN -> lk_kind = MARKED :: else fi
#endif
}

/* @script LockScripts.ACQUIRE sha1=f4dacf56feeb4dcd470ccfabe17db87706295d0c
 * again: ARGV[6] == '1'. res: the fencing token, or 0 (busy, registered). */
inline ACQUIRE(tk, start, again, res) {
  atomic {
    if
    :: lk_tok == 0 ->
       newLock(tk, PLAIN, TTL);
       if
       :: again -> zrem(tk); zcard(); if :: zc > 0 -> lk_kind = MARKED :: else fi
       :: else
       fi;
       nextFence(res)
    :: lk_tok == tk && lk_kind != KEPT ->           /* a retry: the same fencing token */
       lk_exp = now + TTL; zrem(tk);
       if :: fr_val != 0 -> res = fr_val :: else -> nextFence(res) fi
    :: lk_tok == tk && lk_kind == KEPT ->           /* claims the lock kept for it */
#ifdef BUG_CLAIM_NO_MARK
       lk_kind = PLAIN;                                             /* seeded: "tok", not "tok+" */
#else
       lk_kind = MARKED;
#endif
#ifdef BUG_CLAIM_NO_EXPIRY
       lk_exp = NEVER;                                              /* seeded: SET without PX */
#else
       lk_exp = now + TTL;
#endif
       g_keptAt = 0; zrem(tk); nextFence(res)
    :: else ->                                      /* busy: sleeps */
       if :: slp[tk] == 0 -> slp[tk] = start + 1 :: else fi;
       g_reg[tk] = g_epoch;
       slp_exp = now + WL;
       markSleepers();
       res = 0
    fi;
    zc = 0; zm = 0
  }
}

/* The plain SET NX PX of a first attempt that needs no fencing token: 1 if set. */
inline SETNX(tk, res) {
  atomic {
    if :: lk_tok == 0 -> newLock(tk, PLAIN, TTL); res = 1 :: else -> res = 0 fi
  }
}

/* @script LockScripts.RELEASE sha1=94efa9ead3cdf9a1912de982f7d57565056de73e
 * (with sleepers): 1 deleted, 2 kept for the oldest sleeper, 0 not its. */
inline RELEASE(tk, res) {
  atomic {
    if
#ifdef BUG_RELEASE_NO_TOKEN_CHECK
    :: lk_tok != 0 && lk_kind == PLAIN ->                         /* seeded: no compare */
#else
    :: lk_tok == tk && lk_kind == PLAIN ->
#endif
       zm = 1;
       do
       :: zm <= NT -> assert(!(slp[zm] && g_reg[zm] == g_epoch)); zm++   /* sleepers */
       :: else -> break
       od;
       delLock(); res = 1
    :: lk_tok == tk && lk_kind != PLAIN ->
       zpopmin();
       if :: zm == tk -> zpopmin() :: else fi;
       if
       :: zm ->
#ifdef BUG_KEEP_FOR_TTL
          lk_tok = zm; lk_kind = KEPT; lk_exp = now + TTL;          /* seeded: kept for the lease TTL */
#else
          lk_tok = zm; lk_kind = KEPT; lk_exp = now + GRACE;
#endif
          g_keptAt = now;
          publish(zm); res = 2
       :: else -> delLock(); res = 1
       fi
    :: else -> zrem(tk); res = 0
    fi;
    zc = 0; zm = 0
  }
}

/* @script LockScripts.RENEW sha1=0d1ade3c14f13cbad24ec7b251144812731a1216
 * 1 if the token holds the lock (with or without the mark). */
inline RENEW(tk, res) {
  atomic {
#ifdef BUG_RENEW_KEPT
    if :: lk_tok == tk -> lk_exp = now + TTL; res = 1 :: else -> res = 0 fi   /* seeded: "~tok" renewed */
#else
    if :: lk_tok == tk && lk_kind != KEPT -> lk_exp = now + TTL; res = 1 :: else -> res = 0 fi
#endif
  }
}

/* @script LockScripts.HAND_OVER sha1=6c42be7390c89897addb9c28e20a9e9c962a2eac
 * To client j, waiting in the holder's process (reserved at once). */
inline HAND_OVER(tk, j, sent) {
  atomic {
#ifdef BUG_HAND_OVER_NO_CHECK
    if :: phase[j] == WAITING && handed[j] == 0 && lk_tok != 0 ->  /* seeded: no holder check */
#else
    if :: phase[j] == WAITING && handed[j] == 0 && lk_tok == tk && lk_kind != KEPT ->
#endif
       lk_tok = tok[j]; lk_exp = now + TTL; zrem(tok[j]);
       nextFence(handed[j]); handedVu[j] = sent + TTL
    :: else -> skip                                               /* 0: nothing changes */
    fi;
    zc = 0; zm = 0
  }
}

byte tok[NC];             /* each client's current token (for HAND_OVER) */

/* Gives up token t: the lock must be free of it within TTL (LockCore releases by token). */
#define GIVE_UP(t) g_gone[t] = now + TTL

proctype Client(byte i) {
  byte r, t, start, sent, res, att, j;
  r = 0;
next:
  if
  :: r == R -> goto done
  :: else
  fi;
  t = TOKEN(i, r); r++; att = 0; start = now;
  tok[i] = t;
  sent = now;
  if
  :: SETNX(t, res);                     /* a first attempt that needs no fencing token */
     if
     :: res -> goto granted
     :: else
     fi
  :: skip                               /* one that does, or that queued behind a waiter */
  fi;
attempt:
  ACQUIRE(t, start, att > 0, res);
  if
  :: res -> goto granted
  :: else -> att = 1; sent = 0
  fi;
  phase[i] = WAITING;
  do
  :: handed[i] -> atomic { phase[i] = HOLDING; hold[i] = 1; vu[i] = handedVu[i]; handed[i] = 0; handedVu[i] = 0; mutexOk(i) }; goto held
  :: phase[i] = IDLE; sent = now; goto attempt     /* woken by a notice, or its backoff step ended */
  :: phase[i] = IDLE; goto cancel
  od;
granted:
  if
  :: atomic { phase[i] = HOLDING; hold[i] = 1; vu[i] = sent + TTL; sent = 0; res = 0; mutexOk(i) }
  fi;
held:
  do
  :: sent = now;                        /* renewal */
     RENEW(t, res);
     if
     :: res ->
#ifdef BUG_RENEW_FROM_REPLY
        skip;
        atomic { vu[i] = now + TTL; sent = 0; res = 0; mutexOk(i) }  /* seeded: the lease counted from the reply */
#else
        atomic { vu[i] = sent + TTL; sent = 0; res = 0; mutexOk(i) }
#endif
     :: else -> hold[i] = 0; goto cancel  /* lost: released by token */
     fi
  :: j = 0;                             /* hands it to a waiter of its process */
     do
     :: j < NC - 1 -> j++
     :: break
     od;
     j = (i + 1 + j) % NC;
     hold[i] = 0; sent = now;
     HAND_OVER(t, j, sent);
     atomic { GIVE_UP(t); j = 0; sent = 0 };
     phase[i] = IDLE; goto next
  :: hold[i] = 0; goto cancel           /* release (the body ended, or was cancelled, or it crashed) */
#ifdef STALE_ATTEMPT
  :: !att -> att = 1;                   /* an attempt of its that found the lock busy runs late (a NOSCRIPT retry) */
     ACQUIRE(t, start, 1, res); res = 0
#endif
  od;
cancel:
  atomic { hold[i] = 0; phase[i] = IDLE; handed[i] = 0; handedVu[i] = 0; sent = 0; res = 0; GIVE_UP(t) };
  if
  :: RELEASE(t, res)
  :: skip                               /* the release is lost, or the client crashed */
  fi;
  res = 0;
  goto next;
done:
  skip
}

/* Redis's clock: each tick expires the keys whose time has come; once, the clock may step back. */
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
       :: slp_exp <= now -> i = 1; do :: i <= NT -> slp[i] = 0; g_reg[i] = 0; i++ :: else -> break od; slp_exp = 0
       :: else
       fi;
       assert(GRACE_OK);                                           /* grace */
       assert(TTL_OK);                                             /* ttl */
       /* forget what no longer matters, so that equal futures are one state */
       if :: g_fexp <= now -> g_fexp = 0; g_flast = 0 :: else fi;
       i = 0;
       do :: i < NC -> if :: vu[i] <= now -> vu[i] = 0 :: else fi; i++ :: else -> break od;
       i = 1;
       do :: i <= NT -> if :: g_gone[i] != NEVER && g_gone[i] <= now -> g_gone[i] = 0 :: else fi; i++ :: else -> break od;
       i = 0
     }
#ifdef CLOCK_STEP
  :: atomic { back == 0 && now >= 2 -> back = 2 }
#endif
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
