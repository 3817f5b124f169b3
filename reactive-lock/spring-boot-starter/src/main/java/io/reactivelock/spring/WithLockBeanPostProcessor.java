package io.reactivelock.spring;

import io.reactivelock.ReactiveLock;
import java.lang.reflect.Method;
import java.util.Map;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * Proxies the beans that have {@link WithLock} methods, after checking every such method when the
 * bean is made: a method that cannot run under a lock without blocking, an annotation that does
 * not parse or whose TTL the lock refuses, or the lack of a {@link ReactiveLock} bean, fails the
 * bean's creation with a message naming the method.
 *
 * <p>A bean with {@code WithLock} methods is made a dependent of the {@link ReactiveLock} beans, so
 * that the context destroys it first: its reactive {@code @Scheduled} runs are cancelled (and
 * released) while the lock is still open, and then the lock's close waits for those releases.
 *
 * <p>Its proxies come before the reactive {@code @Scheduled} support (whose post-processor runs
 * last), so a scheduled job calls the locked method, and the lock is taken outside advice that
 * other proxies already apply (a transaction, say).
 */
final class WithLockBeanPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor {

    private static final long serialVersionUID = 1L;

    private final transient WithLockInterceptor interceptor;
    private transient @Nullable ConfigurableListableBeanFactory beans;

    WithLockBeanPostProcessor(ObjectProvider<ReactiveLock> locks) {
        this.interceptor = new WithLockInterceptor(locks);
        this.advisor = new DefaultPointcutAdvisor(new AnnotationMatchingPointcut(null, WithLock.class, true), interceptor);
        setBeforeExistingAdvisors(true);
        setProxyTargetClass(true);
        setOrder(Ordered.LOWEST_PRECEDENCE - 1);
    }

    @Override
    public void setBeanFactory(BeanFactory beanFactory) {
        super.setBeanFactory(beanFactory);
        beans = beanFactory instanceof ConfigurableListableBeanFactory listable ? listable : null;
        if (beanFactory instanceof ConfigurableBeanFactory configurable) {
            interceptor.resolvePlaceholdersWith(configurable::resolveEmbeddedValue);
        }
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        Class<?> type = AopUtils.getTargetClass(bean);
        if (AnnotationUtils.isCandidateClass(type, WithLock.class)) {
            Map<Method, WithLock> annotated = MethodIntrospector.selectMethods(type,
                    (MethodIntrospector.MetadataLookup<WithLock>) method -> AnnotatedElementUtils.findMergedAnnotation(method, WithLock.class));
            annotated.forEach(interceptor::register);
            if (!annotated.isEmpty() && beans != null) {
                for (String lock : beans.getBeanNamesForType(ReactiveLock.class, false, false)) {
                    if (!lock.equals(beanName)) {
                        beans.registerDependentBean(lock, beanName);
                    }
                }
            }
        }
        return super.postProcessAfterInitialization(bean, beanName);
    }
}
