/*
 * The multi-lock's protocol beside the single lock's, on the same names: MultiLockScripts.ACQUIRE,
 * RENEW and RELEASE, and the single lock's LockScripts.ACQUIRE, RELEASE, RENEW and plain SET NX PX,
 * each one atomic step over the keys it touches, with the clients of MultiLockStore, RedisStore and
 * LockCore around them. See README.md.
 *
 * Two names, A (0) and B (1), each with the single lock's keys: the lock (absent, "tok", "tok+"
 * with the sleepers mark, "~tok" kept for a sleeper), the fencing record and the sleepers.
 * Client 0 takes both names with the multi-lock and client 1 takes B with the single lock; -DNC=3
 * adds client 2, a single lock of A, and -DNC=4 client 3, a second multi-lock of both names. By
 * default both names are in one group (one server, or one hash slot): one script takes them. With
 * -DSPLIT they are in two groups (a Cluster, two slots): the attempt takes A's group, then B's, and
 * releases the other group when one is refused.
 *
 * Time is absolute ticks 0..MAXT; a key whose expiry time is reached is gone. A lease is valid while
 * now < (when its granting or renewing command was SENT) + TTL, as LockCore counts it; Redis counts
 * the key's TTL from when the script RAN.
 */

#ifndef NC
#define NC 2          /* clients: 0 multi-locks A and B, 1 single-locks B; with -DNC=3, 2 single-locks A; -DNC=4, 3 multi-locks A and B */
#endif
#ifndef TTL
#define TTL 2         /* lease, ticks */
#endif
#ifndef GRACE
#define GRACE 1       /* how long a single lock's release keeps the lock for the sleeper it wakes */
#endif
#ifndef WL
#define WL 2          /* waiter lease: how long the sleepers key lives after a registration */
#endif
#ifndef RET
#define RET 1         /* FENCE_RETENTION: the fencing record lives TTL + RET after an issue */
#endif
#ifndef MAXT
#define MAXT 3        /* the horizon: the clock stops here */
#endif
#ifndef ATTEMPTS
#define ATTEMPTS 3    /* a multi-lock's attempts, then it gives up (each attempt of a split one may write keys) */
#endif

#define NN 2                      /* names */
#define NT NC                     /* tokens 1..NT, one acquisition per client: client i's is i + 1 */
#define MULTI(i) ((i) == 0 || (i) == 3)
#define NAME(i) ((i) == 1 -> 1 : 0)   /* a single lock's name */
#define COVERS(i, n) (MULTI(i) || (n) == NAME(i))
#define NEVER 255

#define PLAIN 0
#define MARKED 1
#define KEPT 2
byte lk_tok[NN], lk_kind[NN], lk_exp[NN];
byte fr_val[NN], fr_exp[NN];
#define SLP(n, t) slp[(n) * (NT + 1) + (t)]
byte slp[NN * (NT + 1)];  /* SLP(n, t): sleeper t's score on name n, its acquisition's start + 1 (0: not a member) */
byte slp_exp[NN];
byte now;

/* The client side. */
bool hold[NC];            /* the client believes it holds its names ... */
byte vu[NC];              /* ... until this tick (its lease) */

/* Ghosts, for the properties. */
byte g_flast[NN], g_fexp[NN];  /* per name: the last fencing token issued, and until when the spec keeps its record */
byte g_epoch[NN];              /* bumped whenever the name's lock key is created */
#define REG(n, t) g_reg[(n) * (NT + 1) + (t)]
byte g_reg[NN * (NT + 1)];     /* the epoch in which each sleeper last registered on each name */
byte g_keptAt[NN];             /* when the name's lock was last kept for a sleeper */
byte g_gone[NT + 1];           /* by when every lock must be free of token t (its client gave it up), NEVER if not yet */

#define VALID(i) (hold[i] && now < vu[i])

/*
 * The properties, as asserts at the only steps that can break them:
 *  mutex:    no two clients hold valid leases on one name (a multi-lock holds both);
 *  fence:    a name's fencing token is above the last one issued for it while that one's record must live;
 *  none:     an attempt that does not get every name holds none of them when it ends;
 *  sleepers: a single lock's release never deletes the lock while a sleeper registered under it is left;
 *  grace:    a lock kept for a sleeper is claimed or gone within GRACE;
 *  ttl:      a lock is free of a token within TTL of its client giving it up.
 */
byte ci, cn;
inline mutexOk(i) {
  cn = 0;
  do
  :: cn < NN ->
     ci = 0;
     do
     :: ci < NC -> assert(ci == i || !COVERS(ci, cn) || !COVERS(i, cn) || !VALID(ci) || !VALID(i)); ci++   /* mutex */
     :: else -> break
     od;
     cn++
  :: else -> break
  od;
  ci = 0; cn = 0
}
#define GRACE_OK(n) (lk_tok[n] == 0 || lk_kind[n] != KEPT || now < g_keptAt[n] + GRACE)
#define TTL_OK(n) (lk_tok[n] == 0 || lk_kind[n] == KEPT || now < g_gone[lk_tok[n]])

/* none: token tk holds none of names first..last (plain, marked or kept for it). */
byte zn;
inline holdsNone(first, last, tk) {
  zn = first;
  do
  :: zn <= last -> assert(lk_tok[zn] != tk); zn++                       /* none */
  :: else -> break
  od;
  zn = 0
}

inline delLock(n) { lk_tok[n] = 0; lk_kind[n] = PLAIN; lk_exp[n] = 0; g_keptAt[n] = 0 }
inline newLock(n, tk, kind) {
  if :: lk_tok[n] == 0 -> g_epoch[n]++ :: else fi;
  lk_tok[n] = tk; lk_kind[n] = kind; lk_exp[n] = now + TTL
}
inline zrem(n, tk) { SLP(n, tk) = 0; REG(n, tk) = 0 }
byte zc, zm, zbest;        /* scratch (atomic steps only) */
inline zcard(n) {
  zc = 0; zm = 1;
  do :: zm <= NT -> if :: SLP(n, zm) -> zc++ :: else fi; zm++ :: else -> break od
}
/* ZPOPMIN: the lowest score, ties to the lower token; into zm (0: empty). The notice it publishes is lossy. */
inline zpopmin(n) {
  zbest = 0; zm = 1;
  do
  :: zm <= NT -> if :: SLP(n, zm) && (zbest == 0 || SLP(n, zm) < SLP(n, zbest)) -> zbest = zm :: else fi; zm++
  :: else -> break
  od;
  zm = zbest; zbest = 0;
  if :: zm -> zrem(n, zm) :: else fi
}
/* Registers tk among name n's sleepers (ZADD NX, PEXPIRE) and marks a holder's lock (markSleepers). */
inline sleep(n, tk, start) {
  if :: SLP(n, tk) == 0 -> SLP(n, tk) = start + 1 :: else fi;
  REG(n, tk) = g_epoch[n];
  slp_exp[n] = now + WL;
#ifndef BUG_SLEEP_NO_MARK
  if :: lk_kind[n] == PLAIN -> lk_kind[n] = MARKED :: else fi
#endif
}

/* Issues fencing token fc on name n: the record set to it for TTL + RET. */
inline issue(n, fc) {
  assert(now >= g_fexp[n] || fc > g_flast[n]);                         /* fence */
  fr_val[n] = fc; fr_exp[n] = now + TTL + RET;
  g_flast[n] = fc; g_fexp[n] = now + TTL + RET
}

/* ---- the single lock (clients 1 and 2) ----------------------------------------------------- */

byte fc;
/* @script LockScripts.ACQUIRE sha1=f4dacf56feeb4dcd470ccfabe17db87706295d0c (shared with lock.pml; here without
 * the clock step). res: the fencing token, or 0 (busy, registered). */
inline ACQUIRE(n, tk, start, again, res) {
  atomic {
    if
    :: lk_tok[n] == 0 ->
       newLock(n, tk, PLAIN);
       if :: again -> zrem(n, tk); zcard(n); if :: zc > 0 -> lk_kind[n] = MARKED :: else fi :: else fi;
       fc = now + 1; if :: fr_val[n] != 0 && fr_val[n] >= fc -> fc = fr_val[n] + 1 :: else fi;
       issue(n, fc); res = fc
    :: lk_tok[n] == tk && lk_kind[n] != KEPT ->
       lk_exp[n] = now + TTL; zrem(n, tk);
       if
       :: fr_val[n] != 0 -> res = fr_val[n]
       :: else -> fc = now + 1; issue(n, fc); res = fc
       fi
    :: lk_tok[n] == tk && lk_kind[n] == KEPT ->
       lk_kind[n] = MARKED; lk_exp[n] = now + TTL; g_keptAt[n] = 0; zrem(n, tk);
       fc = now + 1; if :: fr_val[n] != 0 && fr_val[n] >= fc -> fc = fr_val[n] + 1 :: else fi;
       issue(n, fc); res = fc
    :: else -> sleep(n, tk, start); res = 0
    fi;
    fc = 0; zc = 0; zm = 0
  }
}

/* The plain SET NX PX of a first attempt that needs no fencing token: 1 if set. */
inline SETNX(n, tk, res) {
  atomic {
    if :: lk_tok[n] == 0 -> newLock(n, tk, PLAIN); res = 1 :: else -> res = 0 fi
  }
}

/* @script LockScripts.RELEASE sha1=94efa9ead3cdf9a1912de982f7d57565056de73e (shared with lock.pml):
 * deletes, or keeps the lock for the oldest sleeper (a multi-lock's too) for GRACE. */
inline RELEASE(n, tk) {
  atomic {
    if
    :: lk_tok[n] == tk && lk_kind[n] == PLAIN ->
       zm = 1;
       do
       :: zm <= NT -> assert(!(SLP(n, zm) && REG(n, zm) == g_epoch[n])); zm++   /* sleepers */
       :: else -> break
       od;
       delLock(n)
    :: lk_tok[n] == tk && lk_kind[n] != PLAIN ->
       zpopmin(n);
       if :: zm == tk -> zpopmin(n) :: else fi;
       if
       :: zm -> lk_tok[n] = zm; lk_kind[n] = KEPT; lk_exp[n] = now + GRACE; g_keptAt[n] = now
       :: else -> delLock(n)
       fi
    :: else -> zrem(n, tk)
    fi;
    zc = 0; zm = 0
  }
}

/* @script LockScripts.RENEW sha1=0d1ade3c14f13cbad24ec7b251144812731a1216 (shared with lock.pml) */
inline RENEW(n, tk, res) {
  atomic {
    if :: lk_tok[n] == tk && lk_kind[n] != KEPT -> lk_exp[n] = now + TTL; res = 1 :: else -> res = 0 fi
  }
}

/* ---- the multi-lock (clients 0 and 3) ------------------------------------------------------ */

/* Names first..last are one group: both by default, each alone with -DSPLIT. */
#define OURS(n, tk) (lk_tok[n] == tk)           /* "tok", "tok+" or "~tok" */

/* @script MultiLockScripts.ACQUIRE sha1=3b1457bc43e65457384880ac0ab181098c5efce2
 * res: the fencing token, or 0 when name busy (of the group) is another token's. */
byte mn, mj;
inline MACQUIRE(first, last, tk, start, res, busy) {
  atomic {
    busy = NEVER; mn = first;
    do
    :: mn <= last && lk_tok[mn] != 0 && !OURS(mn, tk) -> busy = mn; break
    :: mn <= last && !(lk_tok[mn] != 0 && !OURS(mn, tk)) -> mn++
    :: mn > last -> break
    od;
    if
    :: busy != NEVER ->                          /* refused: sleeps on the busy name only, keeps nothing */
       mj = first;
       do
       :: mj <= last ->
          if
          :: mj == busy -> sleep(mj, tk, start)
          :: else ->
             zrem(mj, tk);
#ifndef BUG_REFUSAL_KEEPS
             if :: OURS(mj, tk) -> delLock(mj) :: else fi;
#endif
             if :: lk_tok[mj] == 0 -> zpopmin(mj) :: else fi
          fi;
          mj++
       :: else -> break
       od;
       holdsNone(first, last, tk);
       res = 0
    :: else ->                                   /* granted: one fencing token above every name's record */
       fc = now + 1; mj = first;
       do
#ifdef BUG_FENCE_FIRST_NAME
       :: mj <= last -> if :: mj == first && fr_val[mj] != 0 && fr_val[mj] >= fc -> fc = fr_val[mj] + 1 :: else fi; mj++
#else
       :: mj <= last -> if :: fr_val[mj] != 0 && fr_val[mj] >= fc -> fc = fr_val[mj] + 1 :: else fi; mj++
#endif
       :: else -> break
       od;
       mj = first;
       do
       :: mj <= last ->
          zrem(mj, tk); zcard(mj);
          newLock(mj, tk, PLAIN); g_keptAt[mj] = 0;
          if :: zc > 0 -> lk_kind[mj] = MARKED :: else -> lk_kind[mj] = PLAIN fi;
          issue(mj, fc);
          mj++
       :: else -> break
       od;
       res = fc
    fi;
    mn = 0; mj = 0; fc = 0; zc = 0; zm = 0
  }
}

/* @script MultiLockScripts.RENEW sha1=fe7771bd03df3144d5babcb412840e6eb95fb068
 * res: 1 if the token holds every name of the group (plain or marked) and all were extended. */
inline MRENEW(first, last, tk, res) {
  atomic {
    res = 1; mn = first;
    do
    :: mn <= last -> if :: !(lk_tok[mn] == tk && lk_kind[mn] != KEPT) -> res = 0 :: else fi; mn++
    :: else -> break
    od;
    mn = first;
    do
#ifdef BUG_RENEW_SOME
    :: mn <= last -> if :: lk_tok[mn] == tk && lk_kind[mn] != KEPT -> lk_exp[mn] = now + TTL :: else fi; mn++   /* seeded */
#else
    :: mn <= last && res -> lk_exp[mn] = now + TTL; mn++
    :: mn <= last && !res -> mn++
#endif
    :: else -> break
    od;
#ifdef BUG_RENEW_SOME
    res = 1;                                     /* seeded: renewed what it still holds, and said so */
#endif
    mn = 0
  }
}

/* @script MultiLockScripts.RELEASE sha1=b2f5170a534606843dd8c9c0bd7036d5fe8842b9
 * Leaves every name's sleepers; deletes each lock the token holds (or that was kept for it) and wakes its oldest sleeper. */
inline MRELEASE(first, last, tk) {
  atomic {
    mn = first;
    do
    :: mn <= last ->
       zrem(mn, tk);
       if :: OURS(mn, tk) -> delLock(mn); zpopmin(mn) :: else fi;
       mn++
    :: else -> break
    od;
    mn = 0; zm = 0
  }
}

#define GIVE_UP(t) g_gone[t] = now + TTL

proctype Multi(byte i) {
  byte t, start, sent, res, busy, att;
  t = i + 1; start = now;
attempt:
  sent = now;
#ifdef SPLIT
  MACQUIRE(0, 0, t, start, res, busy);         /* A's group, then B's; the other group released when one is refused */
  if
  :: res ->
     MACQUIRE(1, 1, t, start, res, busy);
     if
     :: res -> skip
#ifdef BUG_SPLIT_KEEPS_FIRST
     :: else -> atomic { holdsNone(0, 0, t) }  /* seeded: the group taken first is not released */
#else
     :: else -> atomic { MRELEASE(0, 0, t); holdsNone(0, 0, t) }
#endif
     fi
  :: else -> atomic { MRELEASE(1, 1, t); holdsNone(1, 1, t) }
  fi;
#else
  MACQUIRE(0, 1, t, start, res, busy);
#endif
  if
  :: res -> atomic { hold[i] = 1; vu[i] = sent + TTL; sent = 0; res = 0; busy = 0; mutexOk(i) }; goto held
  :: else -> sent = 0; busy = 0; att++
  fi;
  do
  :: att < ATTEMPTS -> goto attempt             /* woken by a notice, or its backoff step ended */
  :: goto cancel                                /* gives up (its acquire timeout, or cancelled) */
  od;
held:
  do
  :: sent = now;                                /* renewal: every group must still be the token's */
#ifdef SPLIT
     MRENEW(0, 0, t, res);
     if :: res -> MRENEW(1, 1, t, res) :: else fi;
#else
     MRENEW(0, 1, t, res);
#endif
     if
     :: res ->
#ifdef BUG_RENEW_FROM_REPLY
        skip;
        atomic { vu[i] = now + TTL; sent = 0; res = 0; mutexOk(i) }   /* seeded: the lease counted from the reply */
#else
        atomic { vu[i] = sent + TTL; sent = 0; res = 0; mutexOk(i) }
#endif
     :: else -> goto cancel                     /* lost */
     fi
  :: goto cancel                                /* the body ended, was cancelled, or it crashed */
  od;
cancel:
  atomic { hold[i] = 0; sent = 0; res = 0; GIVE_UP(t) };
  if
#ifdef SPLIT
  :: MRELEASE(0, 0, t); MRELEASE(1, 1, t)
  :: MRELEASE(0, 0, t)                          /* one group's release lost */
  :: MRELEASE(1, 1, t)
#else
  :: MRELEASE(0, 1, t)
#endif
  :: skip                                       /* the release is lost, or the client crashed */
  fi
}

proctype Single(byte i; byte n) {
  byte t, start, sent, res, att;
  t = i + 1; start = now; att = 0;
  sent = now;
  if
  :: SETNX(n, t, res); if :: res -> goto granted :: else fi
  :: skip
  fi;
attempt:
  ACQUIRE(n, t, start, att > 0, res);
  if
  :: res -> goto granted
  :: else -> att = 1; sent = 0
  fi;
  do
  :: sent = now; goto attempt
  :: goto cancel
  od;
granted:
  atomic { hold[i] = 1; vu[i] = sent + TTL; sent = 0; res = 0; mutexOk(i) };
  do
  :: sent = now;
     RENEW(n, t, res);
     if
     :: res -> atomic { vu[i] = sent + TTL; sent = 0; res = 0; mutexOk(i) }
     :: else -> goto cancel
     fi
  :: goto cancel
  od;
cancel:
  atomic { hold[i] = 0; sent = 0; res = 0; GIVE_UP(t) };
  if
  :: RELEASE(n, t)
  :: skip
  fi
}

/* Redis's clock: each tick expires the keys whose time has come. */
active proctype Clock() {
  byte i, n;
end:
  do
  :: atomic {
       now < MAXT ->
       now++;
       n = 0;
       do
       :: n < NN ->
          if :: lk_tok[n] != 0 && lk_exp[n] <= now -> delLock(n) :: else fi;
          if :: fr_val[n] != 0 && fr_exp[n] <= now -> fr_val[n] = 0; fr_exp[n] = 0 :: else fi;
          if
          :: slp_exp[n] != 0 && slp_exp[n] <= now ->
             i = 1; do :: i <= NT -> zrem(n, i); i++ :: else -> break od; slp_exp[n] = 0
          :: else
          fi;
          assert(GRACE_OK(n));                                          /* grace */
          assert(TTL_OK(n));                                            /* ttl */
          if :: g_fexp[n] <= now -> g_fexp[n] = 0; g_flast[n] = 0 :: else fi;
          n++
       :: else -> break
       od;
       /* forget what no longer matters, so that equal futures are one state */
       i = 0;
       do :: i < NC -> if :: vu[i] <= now -> vu[i] = 0 :: else fi; i++ :: else -> break od;
       i = 1;
       do :: i <= NT -> if :: g_gone[i] != NEVER && g_gone[i] <= now -> g_gone[i] = 0 :: else fi; i++ :: else -> break od;
       i = 0; n = 0
     }
  od
}

init {
  byte i;
  atomic {
    i = 1;
    do :: i <= NT -> g_gone[i] = NEVER; i++ :: else -> break od;
    i = 0;
    do :: i < NC -> if :: MULTI(i) -> run Multi(i) :: else -> run Single(i, NAME(i)) fi; i++ :: else -> break od
  }
}
