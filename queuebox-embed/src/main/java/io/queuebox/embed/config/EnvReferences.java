package io.queuebox.embed.config;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.commons.text.StringSubstitutor;
import org.apache.commons.text.lookup.StringLookup;

/**
 * {@code ${NAME}} and {@code ${NAME:-default}} in a YAML value, read from the environment, as Spring, Quarkus
 * and Docker Compose users write them; {@code $${NAME}} stays a literal {@code ${NAME}}. A variable that is
 * unset and has no default is a problem naming the key, not an empty value.
 */
final class EnvReferences {

    private final Map<String, String> environment;
    private final Set<String> referenced = new LinkedHashSet<>();

    EnvReferences(Map<String, String> environment) {
        this.environment = environment;
    }

    /** The value with its references expanded; adds a problem naming {@code key} for each unset one. */
    String expand(String key, String value, List<ConfigProblem> problems) {
        if (!value.contains("${")) {
            return value;
        }
        Set<String> missing = new LinkedHashSet<>();
        StringLookup lookup = name -> {
            referenced.add(name);
            String found = environment.get(name);
            if (found == null) {
                missing.add(name);
            }
            return found;
        };
        StringSubstitutor substitutor = new StringSubstitutor(lookup);
        // A default may itself hold a reference (${A:-${B}}); a resolved value is taken as it is.
        substitutor.setEnableSubstitutionInVariables(false);
        String expanded = substitutor.replace(value);
        for (String name : missing) {
            if (expanded.contains("${" + name)) {
                problems.add(new ConfigProblem(key, value, "the environment variable " + name + " is not set and the"
                        + " value gives no default; set " + name + ", or write ${" + name + ":-<default>}"));
            }
        }
        return expanded;
    }

    /** The variables the file named: they are the file's, not unknown QUEUEBOX_ settings. */
    Set<String> referenced() {
        return referenced;
    }
}
