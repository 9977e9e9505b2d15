package io.queuebox.bootstrap.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;

/** One in-process run of the command line, with what it printed. */
record CliRun(int exitCode, String out, String err) {

    static CliRun of(Map<String, String> environment, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Cli.execute(environment, new PrintWriter(out, true), new PrintWriter(err, true), args);
        return new CliRun(code, out.toString(), err.toString());
    }
}
