/*
 * The read-write lock's protocol: PrimitiveScripts.READ_ACQUIRE, WRITE_ACQUIRE, WRITE_RELEASE,
 * LEASE_RENEW and LEASE_RELEASE (the readers' lease set), and the writer's renewal
 * LockScripts.RENEW (traced in lock.pml), each one atomic step over the keys it touches, and the
 * clients of PrimitiveStore / LockCore around them. See README.md.
 *
 * Time is absolute ticks 0..MAXT; a key whose expiry time is reached is gone, and a lease-set member
 * whose score is reached no longer counts (every script that reads the set first drops those). A
 * client's lease is valid while now < (when its granting or renewing command was SENT) + TTL, as
 * LockCore counts it; Redis counts from when the script RAN, at or after that.
 */

#ifndef NC
#define NC 3          /* clients, one acquisition each (token i + 1) */
#endif
#ifndef NW
#define NW 2          /* clients 0 .. NW-1 write, the others read */
#endif
#ifndef TTL
#define TTL 2         /* lease, ticks */
#endif
#ifndef WL
#define WL 1          /* waiter lease: how long a waiting writer keeps new readers out */
#endif
#ifndef RET
#define RET 1         /* FENCE_RETENTION: the fencing record lives TTL + RET after an issue */
#endif
#ifndef MAXT
#define MAXT 4        /* the horizon: the clock stops here */
#endif

#define WRITER(i) ((i) < NW)

byte wtok, wexp;          /* the writer key: its token (0: absent) and expiry */
byte fr_val, fr_exp;      /* the writers' fencing record: the last token issued (0: absent) and its expiry */
byte rsc[NC];             /* the readers' lease set: client i's member scored rsc[i] (0: not a member) */
byte rkexp;               /* its key's expiry (0: no key) */
byte wsc[NC];             /* the waiting writers' lease set, scored by each one's waiter lease */
byte wkexp;
byte now;

/* The client side. */
bool hold[NC];            /* the client believes it holds the lock (to write or to read) ... */
byte vu[NC];              /* ... until this tick (its lease) */

/* Ghosts, for the fence property. */
byte g_flast, g_fexp;     /* the last fencing token issued, and until when the spec keeps its record */

#define VALID(i) (hold[i] && now < vu[i])

/*
 * The properties, as asserts at the only steps that can break them:
 *  rw:    a writer with a valid lease is the only client with a valid lease (checked where a lease
 *         starts or is extended);
 *  fence: a writer's fencing token is above the last one issued while that one's record must live.
 */
byte ci;
inline rwOk(i) {
  ci = 0;
  do
  :: ci < NC -> assert(ci == i || !VALID(ci) || !VALID(i) || (!WRITER(ci) && !WRITER(i))); ci++   /* rw */
  :: else -> break
  od;
  ci = 0
}

byte zm, zc;
/* The lease-set steps, as macros (an inline cannot take an array): dropExpired (ZREMRANGEBYSCORE -inf
 * now), zcard, holdMember (ZADD member now + ttl, then PEXPIRE the key to the set's latest score) and
 * zrem (an empty sorted set is no key). */
#define dropExpired(set) \
  zm = 0; \
  do :: zm < NC -> if :: set[zm] != 0 && set[zm] <= now -> set[zm] = 0 :: else fi; zm++ :: else -> break od; \
  zm = 0
#define zcard(set) \
  zm = 0; zc = 0; \
  do :: zm < NC -> if :: set[zm] != 0 -> zc++ :: else fi; zm++ :: else -> break od; \
  zm = 0
#define holdMember(set, kexp, i, ttl) \
  set[i] = now + ttl; \
  zm = 0; kexp = 0; \
  do :: zm < NC -> if :: set[zm] > kexp -> kexp = set[zm] :: else fi; zm++ :: else -> break od; \
  zm = 0
#define zrem(set, kexp, i) \
  set[i] = 0; \
  zcard(set); \
  if :: zc == 0 -> kexp = 0 :: else fi; \
  zc = 0

/* nextFence: the server clock (now + 1), or one above the record while it lives. */
byte fc;
inline nextFence(res) {
  fc = now + 1;
#ifdef BUG_FENCE_NO_INCREMENT
  if :: fr_val != 0 && fr_val >= fc -> fc = fr_val :: else fi;     /* seeded: "last" instead of "last + 1" */
#else
  if :: fr_val != 0 && fr_val >= fc -> fc = fr_val + 1 :: else fi;
#endif
  fr_val = fc; fr_exp = now + TTL + RET;
  assert(now >= g_fexp || fc > g_flast);                            /* fence */
  g_flast = fc; g_fexp = now + TTL + RET;
  res = fc; fc = 0
}

/* @script PrimitiveScripts.READ_ACQUIRE sha1=37d8a7fc487309e7bd67723c748aa5dbefd3c822 */
inline READ_ACQUIRE(i, res) {
  atomic {
    dropExpired(rsc); dropExpired(wsc);
    zcard(wsc);
#ifdef BUG_READ_IGNORES_WRITER
    if :: rsc[i] == 0 && zc > 0 -> res = 0                         /* seeded: no GET of the writer */
#else
    if :: rsc[i] == 0 && (wtok != 0 || zc > 0) -> res = 0
#endif
    :: else -> holdMember(rsc, rkexp, i, TTL); res = 1
    fi;
    zc = 0
  }
}

/* @script PrimitiveScripts.WRITE_ACQUIRE sha1=a98a9474d6fa6af8a91efe967a5efdccacf13308 */
inline WRITE_ACQUIRE(i, res) {
  atomic {
    dropExpired(rsc); dropExpired(wsc);
    zcard(rsc);
#ifdef BUG_WRITE_IGNORES_READERS
    zc = 0;                                                         /* seeded: no ZCARD of the readers */
#endif
    if
    :: wtok == i + 1 && fr_val != 0 -> wexp = now + TTL; res = fr_val     /* a retry: the same fencing token */
    :: wtok == i + 1 && fr_val == 0 -> wexp = now + TTL; zrem(wsc, wkexp, i); nextFence(res)
    :: wtok != i + 1 && (wtok != 0 || zc > 0) -> holdMember(wsc, wkexp, i, WL); res = 0   /* waits, keeping new readers out */
    :: else -> wtok = i + 1; wexp = now + TTL; zrem(wsc, wkexp, i); nextFence(res)
    fi;
    zc = 0
  }
}

/* The writer's renewal, LockScripts.RENEW: extends the writer key if it is still the token's. */
inline WRITE_RENEW(i, res) {
  atomic { if :: wtok == i + 1 -> wexp = now + TTL; res = 1 :: else -> res = 0 fi }
}

/* @script PrimitiveScripts.LEASE_RENEW sha1=711c706898916806b4b107727252c3d89a75b27f */
inline READ_RENEW(i, res) {
  atomic {
    dropExpired(rsc);
    if :: rsc[i] == 0 -> res = 0 :: else -> holdMember(rsc, rkexp, i, TTL); res = 1 fi
  }
}

/* @script PrimitiveScripts.WRITE_RELEASE sha1=74da3864c6eb746974cecc955d79a87ff797a4a3 */
inline WRITE_RELEASE(i) {
  atomic {
    zrem(wsc, wkexp, i);
    if :: wtok == i + 1 -> wtok = 0; wexp = 0 :: else fi
  }
}

/* @script PrimitiveScripts.LEASE_RELEASE sha1=3165a6b0e6fa1357bf0258cf174f57d19b37730b */
inline READ_RELEASE(i) {
  atomic { zrem(rsc, rkexp, i) }
}

proctype Client(byte i) {
  byte sent, res;
  do
  :: sent = now;
     if :: WRITER(i) -> WRITE_ACQUIRE(i, res) :: else -> READ_ACQUIRE(i, res) fi;
     if
     :: res -> atomic { hold[i] = 1; vu[i] = sent + TTL; sent = 0; res = 0; rwOk(i) }; break
     :: else -> sent = 0                 /* refused: tries again (a release notice, or its backoff step) */
     fi
  :: goto cancel                         /* gives up (its acquire timeout, or cancelled) */
  od;
  do
  :: sent = now;                         /* renewal */
     if :: WRITER(i) -> WRITE_RENEW(i, res) :: else -> READ_RENEW(i, res) fi;
     if
     :: res -> atomic { vu[i] = sent + TTL; sent = 0; res = 0; rwOk(i) }
     :: else -> break                    /* lost */
     fi
  :: break                               /* the body ended, was cancelled, or the client crashed */
  od;
cancel:
  hold[i] = 0;
  if
  :: WRITER(i) -> WRITE_RELEASE(i)       /* also takes a waiting writer out of the waiting set */
  :: !WRITER(i) -> READ_RELEASE(i)
  :: skip                                /* the release is lost, or the client crashed */
  fi
}

/* Redis's clock: each tick expires the keys whose time has come. */
active proctype Clock() {
  byte i;
end:
  do
  :: atomic {
       now < MAXT ->
       now++;
       if :: wtok != 0 && wexp <= now -> wtok = 0; wexp = 0 :: else fi;
       if :: fr_val != 0 && fr_exp <= now -> fr_val = 0; fr_exp = 0 :: else fi;
       if :: rkexp != 0 && rkexp <= now -> i = 0; do :: i < NC -> rsc[i] = 0; i++ :: else -> break od; rkexp = 0 :: else fi;
       if :: wkexp != 0 && wkexp <= now -> i = 0; do :: i < NC -> wsc[i] = 0; i++ :: else -> break od; wkexp = 0 :: else fi;
       /* forget what no longer matters, so that equal futures are one state */
       if :: g_fexp <= now -> g_fexp = 0; g_flast = 0 :: else fi;
       i = 0;
       do :: i < NC -> if :: vu[i] <= now -> vu[i] = 0; hold[i] = 0 :: else fi; i++ :: else -> break od;
       i = 0
     }
  od
}

init {
  byte i;
  atomic {
    i = 0;
    do :: i < NC -> run Client(i); i++ :: else -> break od
  }
}
