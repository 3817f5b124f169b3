/**
 * Optional Spring Boot auto-configuration: a {@link io.reactivelock.redis.ReactiveRedisLock} bean from
 * the application's {@code spring.data.redis.*} settings and the {@code reactive-lock.*}
 * properties, with Micrometer metrics and observations when the application has them. Needs
 * {@code spring-boot-autoconfigure} on the classpath; the rest of the library does not.
 */
@NullMarked
package io.reactivelock.spring;

import org.jspecify.annotations.NullMarked;
