package io.queuebox.testkit.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.AccessTarget.MethodCallTarget;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaMethodCall;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.CompositeArchRule;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The module rules of ARCHITECTURE.md as ArchUnit rules. Each public field is one rule on the real
 * QueueBox packages, named as the sentence it enforces, and built from a public factory method that takes
 * the package names, so the rules are also run against deliberately bad fixture packages (a rule that
 * cannot fail is caught there).
 *
 * <p>Use them in a module's tests:
 *
 * <pre>{@code
 * @AnalyzeClasses(packages = "io.queuebox", importOptions = ImportOption.DoNotIncludeTests.class)
 * class ArchitectureTest {
 *     @ArchTest
 *     static final ArchRule adapters_do_not_depend_on_the_domain = QueueBoxArchitecture.adapters_do_not_depend_on_the_domain;
 * }
 * }</pre>
 *
 * Rules about adapters and the bootstrap allow an empty selection, so a module without classes yet passes;
 * rules about the ports and the domain do not, because those packages always exist.
 */
public final class QueueBoxArchitecture {

    /** The root package of every QueueBox module. */
    public static final String ROOT = "io.queuebox";
    public static final String PORTS = "io.queuebox.ports";
    public static final String DOMAIN = "io.queuebox.domain";
    public static final String BOOTSTRAP = "io.queuebox.bootstrap";
    /** The lean library embedders depend on ({@code queuebox-embed}): builder, keys, pools, metrics. */
    public static final String EMBED = "io.queuebox.embed";
    /** The Spring Boot starter, built on {@link #EMBED}. */
    public static final String SPRING = "io.queuebox.spring";
    /** The demo ({@code queuebox-demo}), the only module allowed embedded servers. */
    public static final String DEMO = "io.queuebox.demo";
    /**
     * What the embedding library and the starter must not carry into an application: the runnable jar's CLI and
     * logging backend, the demo, test frameworks and in-process servers.
     */
    public static final List<String> NOT_FOR_EMBEDDERS = List.of("io.queuebox.bootstrap..", "io.queuebox.demo..",
            "picocli..", "ch.qos.logback..", "org.junit..", "org.assertj..", "io.zonky..",
            "org.apache.kafka.common.test..", "kafka.server..", "org.testcontainers..");
    /** Test support that resolves services from environment variables, like the bootstrap does. */
    public static final String TESTKIT_SERVICES = "io.queuebox.testkit.services";
    /** The package of every adapter module. */
    public static final List<String> ADAPTERS = List.of("io.queuebox.postgres", "io.queuebox.sqlserver",
            "io.queuebox.kafka", "io.queuebox.rabbitmq", "io.queuebox.capture", "io.queuebox.inbox");
    /** The inbox module: its core uses JDBC only; each broker's client is used in that broker's helper package alone. */
    public static final String INBOX = "io.queuebox.inbox";
    /**
     * Support shared by adapters (the SQL adapters' {@code adapter-jdbc}). Adapters may depend on it; it obeys
     * the adapter rules itself and depends on no adapter, so it cannot become a back door between them.
     */
    public static final List<String> ADAPTER_SUPPORT = List.of("io.queuebox.jdbc");
    /** The adapters that are databases: the bootstrap reaches them only through {@code DatabaseProvider}. */
    public static final List<String> DATABASE_ADAPTERS = List.of("io.queuebox.postgres", "io.queuebox.sqlserver");

    /** Libraries that belong in adapters or the bootstrap, never in the ports or the domain. */
    public static final List<String> INFRASTRUCTURE_PACKAGES = List.of("java.sql..", "javax.sql..",
            "org.apache.kafka..", "com.rabbitmq..", "io.debezium..", "org.jdbi..", "io.micrometer..",
            "com.fasterxml..", "org.slf4j..");

    // Declared before the rules: static fields initialise in source order.

    private static final Map<String, Set<String>> ENVIRONMENT_READERS = Map.of(
            "java.lang.System", Set.of("getenv", "getProperty", "getProperties"),
            "java.lang.Boolean", Set.of("getBoolean"),
            "java.lang.Integer", Set.of("getInteger"),
            "java.lang.Long", Set.of("getLong"));

    private static final DescribedPredicate<JavaMethodCall> READS_ENVIRONMENT =
            new DescribedPredicate<>("read environment variables or system properties") {
                @Override
                public boolean test(JavaMethodCall call) {
                    MethodCallTarget target = call.getTarget();
                    return ENVIRONMENT_READERS.getOrDefault(target.getOwner().getName(), Set.of())
                            .contains(target.getName());
                }
            };

    private static final DescribedPredicate<JavaMethodCall> READS_WALL_CLOCK_OR_SLEEPS =
            new DescribedPredicate<>("read the wall clock or sleep") {
                @Override
                public boolean test(JavaMethodCall call) {
                    MethodCallTarget target = call.getTarget();
                    JavaClass owner = target.getOwner();
                    String name = target.getName();
                    boolean noArguments = target.getRawParameterTypes().isEmpty();
                    return (owner.getPackageName().equals("java.time") && name.equals("now") && noArguments)
                            || (owner.isEquivalentTo(System.class) && name.equals("currentTimeMillis"))
                            || (owner.isEquivalentTo(Thread.class) && name.equals("sleep"))
                            || (owner.getName().startsWith("java.util.concurrent.TimeUnit") && name.equals("sleep"));
                }
            };

    public static final ArchRule ports_depend_only_on_the_jdk = portsDependOnlyOnTheJdk(PORTS);

    public static final ArchRule the_domain_depends_only_on_the_ports_and_the_jdk =
            domainDependsOnlyOnPortsAndTheJdk(DOMAIN, PORTS);

    public static final ArchRule ports_and_domain_use_no_infrastructure_library = noInfrastructureIn(PORTS, DOMAIN);

    public static final ArchRule adapters_do_not_depend_on_the_domain =
            adaptersDoNotDependOnTheDomain(DOMAIN, adaptersAndTheirSupport());

    public static final ArchRule adapters_do_not_depend_on_each_other =
            adaptersDoNotDependOnEachOther(ADAPTERS.toArray(String[]::new));

    public static final ArchRule adapters_do_not_depend_on_the_bootstrap =
            adaptersDoNotDependOnTheBootstrap(BOOTSTRAP, adaptersAndTheirSupport());

    public static final ArchRule adapter_support_depends_on_no_adapter =
            adapterSupportDependsOnNoAdapter(ADAPTER_SUPPORT, ADAPTERS.toArray(String[]::new));

    public static final ArchRule adapters_do_not_depend_on_the_embedding_library =
            adaptersDoNotDependOnTheBootstrap(EMBED, adaptersAndTheirSupport());

    public static final ArchRule modules_are_free_of_cycles = modulesAreFreeOfCycles(ROOT);

    public static final ArchRule the_embedding_library_names_no_concrete_database_adapter =
            theBootstrapNamesNoDatabaseAdapter(EMBED, DATABASE_ADAPTERS.toArray(String[]::new));

    public static final ArchRule the_starter_names_no_concrete_database_adapter =
            theBootstrapNamesNoDatabaseAdapter(SPRING, DATABASE_ADAPTERS.toArray(String[]::new));

    public static final ArchRule the_embedding_library_and_the_starter_carry_no_cli_demo_logging_backend_or_test_framework =
            leanForEmbedders(List.of(EMBED, SPRING), NOT_FOR_EMBEDDERS);

    public static final ArchRule the_bootstrap_names_no_concrete_database_adapter =
            theBootstrapNamesNoDatabaseAdapter(BOOTSTRAP, DATABASE_ADAPTERS.toArray(String[]::new));

    public static final ArchRule the_domain_neither_reads_the_wall_clock_nor_sleeps = noWallClockOrSleepIn(DOMAIN);

    public static final ArchRule only_the_bootstrap_reads_environment_variables_and_system_properties =
            onlyTheseReadTheEnvironment(ROOT, BOOTSTRAP, TESTKIT_SERVICES);

    public static final ArchRule each_broker_client_is_used_only_by_its_inbox_helper = brokerClientsOnlyInTheirHelpers(
            INBOX, Map.of("org.apache.kafka", INBOX + ".kafka", "com.rabbitmq", INBOX + ".rabbitmq"));

    private QueueBoxArchitecture() {
    }

    /** Every rule above, for a module that sees all packages (the bootstrap, the testkit). */
    public static List<ArchRule> all() {
        return List.of(ports_depend_only_on_the_jdk, the_domain_depends_only_on_the_ports_and_the_jdk,
                ports_and_domain_use_no_infrastructure_library, adapters_do_not_depend_on_the_domain,
                adapters_do_not_depend_on_each_other, adapters_do_not_depend_on_the_bootstrap,
                adapter_support_depends_on_no_adapter, the_bootstrap_names_no_concrete_database_adapter,
                modules_are_free_of_cycles, the_domain_neither_reads_the_wall_clock_nor_sleeps,
                only_the_bootstrap_reads_environment_variables_and_system_properties,
                each_broker_client_is_used_only_by_its_inbox_helper,
                adapters_do_not_depend_on_the_embedding_library,
                the_embedding_library_names_no_concrete_database_adapter,
                the_starter_names_no_concrete_database_adapter,
                the_embedding_library_and_the_starter_carry_no_cli_demo_logging_backend_or_test_framework);
    }

    /** The rules an adapter module applies to itself. */
    public static List<ArchRule> adapterRules() {
        return List.of(adapters_do_not_depend_on_the_domain, adapters_do_not_depend_on_each_other,
                adapters_do_not_depend_on_the_bootstrap, adapter_support_depends_on_no_adapter,
                modules_are_free_of_cycles, only_the_bootstrap_reads_environment_variables_and_system_properties);
    }

    // ------------------------------------------------------------------------------------- factories

    /** Classes in {@code portsPackage} depend only on the JDK and on each other. */
    public static ArchRule portsDependOnlyOnTheJdk(String portsPackage) {
        return classes().that().resideInAPackage(portsPackage + "..")
                .should().onlyDependOnClassesThat().resideInAnyPackage("java..", portsPackage + "..")
                .because("the ports are the contract that others implement: pass data as JDK types or as records "
                        + "in " + portsPackage + ", and move anything else into an adapter");
    }

    /** Classes in {@code domainPackage} depend only on the JDK, the ports and each other. */
    public static ArchRule domainDependsOnlyOnPortsAndTheJdk(String domainPackage, String portsPackage) {
        return classes().that().resideInAPackage(domainPackage + "..")
                .should().onlyDependOnClassesThat().resideInAnyPackage("java..", portsPackage + "..", domainPackage + "..")
                .because("the domain states the rules without technology: reach an adapter through a port in "
                        + portsPackage + " and let the bootstrap wire it in");
    }

    /** No class in {@code packages} uses JDBC, a broker client, Debezium, Jdbi, Micrometer, Jackson or slf4j. */
    public static ArchRule noInfrastructureIn(String... packages) {
        return noClasses().that().resideInAnyPackage(subPackages(packages))
                .should().dependOnClassesThat().resideInAnyPackage(INFRASTRUCTURE_PACKAGES.toArray(String[]::new))
                .because("ports and domain stay free of infrastructure: put SQL, broker, capture and JSON code in "
                        + "an adapter, and report what happened through DeliveryListener instead of logging or metrics");
    }

    /** No class of the adapter packages depends on {@code domainPackage}. */
    public static ArchRule adaptersDoNotDependOnTheDomain(String domainPackage, String... adapterPackages) {
        return noClasses().that().resideInAnyPackage(subPackages(adapterPackages))
                .should().dependOnClassesThat().resideInAPackage(domainPackage + "..")
                .because("an adapter implements a port and receives the rules it needs (a backoff, a claim "
                        + "policy) as data through that port; add the data to the port instead of importing the domain")
                .allowEmptyShould(true);
    }

    /** No class of one adapter package depends on another adapter package. */
    public static ArchRule adaptersDoNotDependOnEachOther(String... adapterPackages) {
        return slices().assignedFrom(adapterSlices(adapterPackages))
                .should().notDependOnEachOther()
                .because("adapters are interchangeable plug-ins: share code through the ports, or extract a small "
                        + "shared module that both depend on, and let the bootstrap combine adapters")
                .allowEmptyShould(true);
    }

    /**
     * No class of the support packages depends on an adapter package. Adapters may use the support (the
     * isolation rule leaves it out of its slices), so this rule keeps it from carrying one adapter into another.
     */
    public static ArchRule adapterSupportDependsOnNoAdapter(List<String> supportPackages, String... adapterPackages) {
        return noClasses().that().resideInAnyPackage(subPackages(supportPackages.toArray(String[]::new)))
                .should().dependOnClassesThat().resideInAnyPackage(subPackages(adapterPackages))
                .because("shared adapter support is database-neutral and sits below the adapters: move what "
                        + "belongs to one adapter back into it, or pass it in as data")
                .allowEmptyShould(true);
    }

    /** No class of the adapter packages depends on {@code bootstrapPackage}. */
    public static ArchRule adaptersDoNotDependOnTheBootstrap(String bootstrapPackage, String... adapterPackages) {
        return noClasses().that().resideInAnyPackage(subPackages(adapterPackages))
                .should().dependOnClassesThat().resideInAPackage(bootstrapPackage + "..")
                .because("the bootstrap depends on the adapters, not the other way round: take configuration "
                        + "as constructor or builder arguments of the adapter")
                .allowEmptyShould(true);
    }

    /**
     * No class of {@code bootstrapPackage} depends on a database adapter package: the database is a plug-in,
     * found through {@code java.util.ServiceLoader} by {@code database.url}, like the broker.
     */
    public static ArchRule theBootstrapNamesNoDatabaseAdapter(String bootstrapPackage, String... databaseAdapterPackages) {
        return noClasses().that().resideInAPackage(bootstrapPackage + "..")
                .should().dependOnClassesThat().resideInAnyPackage(subPackages(databaseAdapterPackages))
                .because("the database is chosen from database.url through the DatabaseProvider of each adapter "
                        + "(META-INF/services): reach the store, writer, scripts and capture pieces through "
                        + "Databases and OutboxDatabase, or add what is missing to DatabaseProvider")
                .allowEmptyShould(true);
    }

    /**
     * No class of {@code libraryPackages} depends on the {@code forbidden} packages (patterns such as
     * {@code picocli..}): what an application embeds stays free of the runnable jar's CLI and logging backend,
     * of the demo, and of test frameworks and in-process servers.
     */
    public static ArchRule leanForEmbedders(List<String> libraryPackages, List<String> forbidden) {
        return noClasses().that().resideInAnyPackage(subPackages(libraryPackages.toArray(String[]::new)))
                .should().dependOnClassesThat().resideInAnyPackage(forbidden.toArray(String[]::new))
                .because("an application depends on queuebox-embed (or the starter) and must not inherit a CLI, a"
                        + " logging backend, the demo's servers or a test framework: keep such code in"
                        + " queuebox-bootstrap or queuebox-demo, or in test scope")
                .allowEmptyShould(true);
    }

    /** The modules below {@code rootPackage} (one slice per direct sub-package) form no dependency cycle. */
    public static ArchRule modulesAreFreeOfCycles(String rootPackage) {
        return slices().matching(rootPackage + ".(*)..")
                .should().beFreeOfCycles()
                .because("modules build in one direction (ports, domain, adapters, bootstrap): move the type both "
                        + "sides need into the lower module, usually the ports")
                .allowEmptyShould(true);
    }

    /**
     * No class in {@code packages} reads the wall clock ({@code Instant.now()} and the other no-argument
     * {@code java.time} {@code now()} methods, {@code System.currentTimeMillis()}) or sleeps
     * ({@code Thread.sleep}, {@code TimeUnit.sleep}).
     */
    public static ArchRule noWallClockOrSleepIn(String... packages) {
        return noClasses().that().resideInAnyPackage(subPackages(packages))
                .should().callMethodWhere(READS_WALL_CLOCK_OR_SLEEPS)
                .because("time comes in through an injected java.time.Clock (use Instant.now(clock)) and waiting "
                        + "through the engine's scheduler, so tests control both");
    }

    /**
     * Only classes in {@code allowedPackages} (below {@code rootPackage}) read environment variables or
     * system properties.
     */
    public static ArchRule onlyTheseReadTheEnvironment(String rootPackage, String... allowedPackages) {
        return noClasses().that().resideInAPackage(rootPackage + "..")
                .and().resideOutsideOfPackages(subPackages(allowedPackages))
                .should().callMethodWhere(READS_ENVIRONMENT)
                .because("configuration enters through the bootstrap only: take the value as a setting or builder "
                        + "argument (for the operating-system user, ProcessHandle.current().info().user())")
                .allowEmptyShould(true);
    }

    /**
     * Below {@code modulePackage}, the classes of each client package (key) are used only in its helper package
     * (value): a module whose broker clients are optional dependencies must not need one of them where the
     * application may not have it (the core, or the other broker's helper).
     */
    public static ArchRule brokerClientsOnlyInTheirHelpers(String modulePackage, Map<String, String> helperByClient) {
        List<ArchRule> rules = new ArrayList<>();
        helperByClient.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(entry -> rules.add(
                noClasses().that().resideInAPackage(modulePackage + "..")
                        .and().resideOutsideOfPackage(entry.getValue() + "..")
                        .should().dependOnClassesThat().resideInAPackage(entry.getKey() + "..")
                        .because("the broker clients are optional dependencies: an application consuming from one broker "
                                + "has only that client, so move the code that needs " + entry.getKey() + " into "
                                + entry.getValue())
                        .allowEmptyShould(true)));
        CompositeArchRule all = CompositeArchRule.of(rules.get(0));
        for (ArchRule rule : rules.subList(1, rules.size())) {
            all = all.and(rule);
        }
        return all;
    }

    private static String[] adaptersAndTheirSupport() {
        List<String> packages = new ArrayList<>(ADAPTERS);
        packages.addAll(ADAPTER_SUPPORT);
        return packages.toArray(String[]::new);
    }

    private static SliceAssignment adapterSlices(String... adapterPackages) {
        List<String> adapters = List.copyOf(Arrays.asList(adapterPackages));
        return new SliceAssignment() {
            @Override
            public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
                String packageName = javaClass.getPackageName();
                for (String adapter : adapters) {
                    if (packageName.equals(adapter) || packageName.startsWith(adapter + ".")) {
                        return SliceIdentifier.of(adapter);
                    }
                }
                return SliceIdentifier.ignore();
            }

            @Override
            public String getDescription() {
                return "adapters " + adapters;
            }
        };
    }

    private static String[] subPackages(String... packages) {
        List<String> patterns = new ArrayList<>(packages.length);
        for (String name : packages) {
            patterns.add(name + "..");
        }
        return patterns.toArray(String[]::new);
    }
}
