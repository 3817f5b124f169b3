/*
 * The semaphore's protocol: PrimitiveScripts.SEMAPHORE_ACQUIRE, LEASE_RENEW and LEASE_RELEASE over
 * one lease set (a sorted set of holders scored by the end of each one's lease, on the server's
 * clock), each one atomic step, and the clients of PrimitiveStore / LockCore around them. See README.md.
 *
 * Time is absolute ticks 0..MAXT; a key whose expiry time is reached is gone, and a member whose
 * score is reached no longer counts (every script that reads the set first drops those). A client's
 * lease is valid while now < (when its granting or renewing command was SENT) + its TTL, as
 * LockCore counts it; the server scores the member from when the script RAN, at or after that.
 * Clients take different numbers of permits with different TTLs, so that one holder's renewal sets
 * the key's expiry while another holds a longer lease.
 */

#ifndef NC
#define NC 3          /* clients, one acquisition each (token i + 1) */
#endif
#ifndef CAP
#define CAP 2         /* the semaphore's capacity */
#endif
#ifndef MAXT
#define MAXT 4        /* the horizon: the clock stops here */
#endif

/* Client i takes N(i) permits for TTL(i) ticks: 2 for 3, then 1 for 1, then 1 for 2. */
#define N(i) (i == 0 -> 2 : 1)
#define TTL(i) (i == 0 -> 3 : (i == 1 -> 1 : 2))

byte sc[NC];              /* the lease set: client i's member scored sc[i] (0: not a member) */
byte kexp;                /* the key's expiry (0: no key) */
byte now;

/* The client side. */
bool hold[NC];            /* the client believes it holds its permits ... */
byte vu[NC];              /* ... until this tick (its lease) */

#define VALID(i) (hold[i] && now < vu[i])

/*
 * The property, as an assert at the only steps that can break it (a lease starts or is extended):
 *  permits: the permits of the clients with valid leases never exceed the capacity.
 */
byte ci, used;
inline permitsOk() {
  ci = 0; used = 0;
  do
  :: ci < NC -> if :: VALID(ci) -> used = used + N(ci) :: else fi; ci++
  :: else -> break
  od;
  assert(used <= CAP);                                              /* permits */
  ci = 0; used = 0
}

/* dropExpired: ZREMRANGEBYSCORE key -inf now. */
byte zm;
inline dropExpired() {
  zm = 0;
  do :: zm < NC -> if :: sc[zm] != 0 && sc[zm] <= now -> sc[zm] = 0 :: else fi; zm++ :: else -> break od;
  zm = 0
}

/* hold: ZADD member now + ttl, then PEXPIRE the key to its latest score (a key with no member is gone). */
inline holdMember(i) {
  sc[i] = now + TTL(i);
#ifdef BUG_KEY_TTL_OWN
  kexp = now + TTL(i);                                              /* seeded: PEXPIRE to this member's lease */
#else
  zm = 0; kexp = 0;
  do :: zm < NC -> if :: sc[zm] > kexp -> kexp = sc[zm] :: else fi; zm++ :: else -> break od;
  zm = 0
#endif
}

/* @script PrimitiveScripts.SEMAPHORE_ACQUIRE sha1=10055f6013b59bb64cdd29664025e715e6c48f7c */
byte su;
inline ACQUIRE(i, res) {
  atomic {
    dropExpired();
    su = 0;
#ifndef BUG_NO_CAPACITY_CHECK
    if
    :: sc[i] == 0 ->
       zm = 0;
       do :: zm < NC -> if :: sc[zm] != 0 -> su = su + N(zm) :: else fi; zm++ :: else -> break od;
       zm = 0
    :: else
    fi;
#endif
    if
    :: sc[i] == 0 && su + N(i) > CAP -> res = 0
    :: else -> holdMember(i); res = 1
    fi;
    su = 0
  }
}

/* @script PrimitiveScripts.LEASE_RENEW sha1=711c706898916806b4b107727252c3d89a75b27f */
inline RENEW(i, res) {
  atomic {
    dropExpired();
#ifdef BUG_RENEW_RESURRECTS
    holdMember(i); res = 1                                          /* seeded: no ZSCORE check */
#else
    if :: sc[i] == 0 -> res = 0 :: else -> holdMember(i); res = 1 fi
#endif
  }
}

/* @script PrimitiveScripts.LEASE_RELEASE sha1=3165a6b0e6fa1357bf0258cf174f57d19b37730b */
inline RELEASE(i) {
  atomic {
    sc[i] = 0;
    zm = 0; su = 0;
    do :: zm < NC -> if :: sc[zm] != 0 -> su++ :: else fi; zm++ :: else -> break od;
    if :: su == 0 -> kexp = 0 :: else fi;                          /* an empty sorted set is no key */
    zm = 0; su = 0
  }
}

proctype Client(byte i) {
  byte sent, res;
attempt:
  do
  :: sent = now;
     ACQUIRE(i, res);
     if
     :: res -> atomic { hold[i] = 1; vu[i] = sent + TTL(i); sent = 0; res = 0; permitsOk() }; break
     :: else -> sent = 0                 /* refused: tries again (a release notice, or its backoff step) */
     fi
  :: goto done                           /* gives up (its acquire timeout, or cancelled) */
  od;
  do
  :: sent = now;                         /* renewal */
     RENEW(i, res);
     if
     :: res ->
#ifdef BUG_RENEW_FROM_REPLY
        atomic { vu[i] = now + TTL(i); sent = 0; res = 0; permitsOk() }   /* seeded: the lease counted from the reply */
#else
        atomic { vu[i] = sent + TTL(i); sent = 0; res = 0; permitsOk() }
#endif
     :: else -> hold[i] = 0; break       /* lost */
     fi
  :: hold[i] = 0; break                  /* the body ended, was cancelled, or the client crashed */
  od;
  if
  :: RELEASE(i)
  :: skip                                /* the release is lost, or the client crashed */
  fi;
done:
  skip
}

/* Redis's clock: each tick expires the key when its time has come. */
active proctype Clock() {
  byte i;
end:
  do
  :: atomic {
       now < MAXT ->
       now++;
       if :: kexp != 0 && kexp <= now -> i = 0; do :: i < NC -> sc[i] = 0; i++ :: else -> break od; kexp = 0 :: else fi;
       /* forget what no longer matters, so that equal futures are one state */
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
