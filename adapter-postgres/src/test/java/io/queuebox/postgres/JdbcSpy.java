package io.queuebox.postgres;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiPredicate;
import javax.sql.DataSource;

/** For tests that wrap JDBC objects in dynamic proxies: the call passed on to the real object. */
final class JdbcSpy {

    private JdbcSpy() {
    }

    /**
     * A data source whose connections add one to {@code calls} for each call of theirs that {@code counted} accepts
     * (by method name and arguments, null for none).
     */
    static DataSource counting(DataSource target, BiPredicate<String, Object[]> counted, AtomicInteger calls) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    Object result = invoke(target, method, args);
                    if (!(result instanceof Connection connection)) {
                        return result;
                    }
                    return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                            (p, m, a) -> {
                                if (counted.test(m.getName(), a)) {
                                    calls.incrementAndGet();
                                }
                                return invoke(connection, m, a);
                            });
                });
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
