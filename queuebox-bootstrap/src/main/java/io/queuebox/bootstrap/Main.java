package io.queuebox.bootstrap;

import io.queuebox.bootstrap.cli.Cli;
import java.io.PrintWriter;
import java.nio.charset.Charset;

/** The entry point of {@code queuebox.jar}: runs the command line and exits with its code. */
public final class Main {

    private Main() {
    }

    public static void main(String[] args) {
        Charset charset = Charset.defaultCharset();
        PrintWriter out = new PrintWriter(new java.io.OutputStreamWriter(System.out, charset), true);
        PrintWriter err = new PrintWriter(new java.io.OutputStreamWriter(System.err, charset), true);
        System.exit(Cli.execute(System.getenv(), out, err, args));
    }
}
