package io.queuebox.postgres;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/** For tests that wrap JDBC objects in dynamic proxies: the call passed on to the real object. */
final class JdbcSpy {

    private JdbcSpy() {
    }

    /** Calls {@code method} on {@code target}, throwing what it threw rather than its reflective wrapper. */
    static Object invoke(Object target, Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
