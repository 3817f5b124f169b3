package io.reactivelock.spi;

import java.time.Duration;
import reactor.core.scheduler.Scheduler;

/**
 * What a {@link LockStore} is told of one acquisition when it {@linkplain LockStore#open opens}
 * its state: the lock name, the acquisition's own ownership token, the lease TTL asked for, the
 * scheduler for the store's timers and command timeouts (the lock's, so that virtual time moves
 * them), and the {@link Waiter} through which the store may wake the acquisition or hand it the
 * lock. The store keeps what it needs; it never sees the engine's acquisition itself.
 *
 * @param name the lock name
 * @param token this acquisition's token, the same for every attempt
 * @param ttl the lease TTL asked for
 * @param fencing whether the lease must carry a fencing token: false for a body that cannot see
 *     the lease ({@code withLock(name, ttl, Mono)}), so that a store may skip issuing one
 * @param timers the scheduler of the lock's timers
 * @param waiter the store's handle on the acquisition while it waits
 */
public record Request(String name, String token, Duration ttl, boolean fencing, Scheduler timers, Waiter waiter) {}
