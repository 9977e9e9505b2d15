package io.queuebox.bootstrap;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The plug-in folder: every {@code *.jar} in it joins the class path before the command line runs, so a broker
 * adapter (a {@code MessagePublisherProvider} listed in its {@code META-INF/services}) is found by
 * {@code broker.type} with {@code java -jar queuebox.jar}. The folder is {@code plugins/} beside
 * {@code queuebox.jar} ({@code /opt/queuebox/plugins} in the image), or the one named by
 * {@value #DIRECTORY_PROPERTY}.
 */
final class Plugins {

    /** The system property that names another plug-in folder. */
    static final String DIRECTORY_PROPERTY = "queuebox.plugins.dir";

    private final List<Path> jars;
    private final ClassLoader loader;

    private Plugins(List<Path> jars, ClassLoader loader) {
        this.jars = jars;
        this.loader = loader;
    }

    /** The plug-ins of {@code directory}, loaded by a child of {@code parent}; none when the folder does not exist. */
    static Plugins in(Path directory, ClassLoader parent) {
        if (directory == null || !Files.isDirectory(directory)) {
            return new Plugins(List.of(), parent);
        }
        List<Path> jars;
        try (Stream<Path> files = Files.list(directory)) {
            // Sorted, so that two plug-ins defining the same class resolve the same way on every start.
            jars = files.filter(file -> file.getFileName().toString().endsWith(".jar") && Files.isRegularFile(file))
                    .sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the plug-in folder " + directory, e);
        }
        if (jars.isEmpty()) {
            return new Plugins(jars, parent);
        }
        List<URL> urls = new ArrayList<>();
        for (Path jar : jars) {
            try {
                urls.add(jar.toUri().toURL());
            } catch (MalformedURLException e) {
                throw new IllegalArgumentException("not a usable plug-in path: " + jar, e);
            }
        }
        return new Plugins(jars, new URLClassLoader("queuebox-plugins", urls.toArray(URL[]::new), parent));
    }

    /** {@code plugins/} beside the jar this class was loaded from; empty when not run from a jar. */
    static Optional<Path> besideTheJar() {
        try {
            Path location = Path.of(Plugins.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            return Files.isRegularFile(location) ? Optional.of(location.resolveSibling("plugins")) : Optional.empty();
        } catch (URISyntaxException | RuntimeException e) {
            return Optional.empty();
        }
    }

    List<Path> jars() {
        return jars;
    }

    /** The class loader that sees the jar and its plug-ins; the jar's own when there are none. */
    ClassLoader loader() {
        return loader;
    }
}
