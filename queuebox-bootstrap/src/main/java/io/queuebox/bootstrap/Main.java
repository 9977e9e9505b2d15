package io.queuebox.bootstrap;

import io.queuebox.bootstrap.cli.Cli;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The entry point of {@code queuebox.jar}: loads the plug-in folder ({@link Plugins}), runs the command line and
 * exits with its code.
 */
public final class Main {

    private Main() {
    }

    public static void main(String[] args) {
        Charset charset = Charset.defaultCharset();
        PrintWriter out = new PrintWriter(new java.io.OutputStreamWriter(System.out, charset), true);
        PrintWriter err = new PrintWriter(new java.io.OutputStreamWriter(System.err, charset), true);
        Optional<Path> folder = Optional.ofNullable(System.getProperty(Plugins.DIRECTORY_PROPERTY)).map(Path::of)
                .or(Plugins::besideTheJar);
        Plugins plugins = Plugins.in(folder.orElse(null), Main.class.getClassLoader());
        if (!plugins.jars().isEmpty()) {
            // The broker providers are found through ServiceLoader on the context class loader; config check
            // lists them.
            Thread.currentThread().setContextClassLoader(plugins.loader());
        }
        System.exit(Cli.execute(System.getenv(), out, err, args));
    }
}
