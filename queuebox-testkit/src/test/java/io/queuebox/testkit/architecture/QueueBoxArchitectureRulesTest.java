package io.queuebox.testkit.architecture;

import static io.queuebox.testkit.architecture.QueueBoxArchitecture.adapterSupportDependsOnNoAdapter;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.brokerClientsOnlyInTheirHelpers;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.adaptersDoNotDependOnEachOther;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.adaptersDoNotDependOnTheBootstrap;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.adaptersDoNotDependOnTheDomain;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.domainDependsOnlyOnPortsAndTheJdk;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.leanForEmbedders;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.modulesAreFreeOfCycles;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.noInfrastructureIn;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.noWallClockOrSleepIn;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.theBootstrapNamesNoDatabaseAdapter;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.onlyTheseReadTheEnvironment;
import static io.queuebox.testkit.architecture.QueueBoxArchitecture.portsDependOnlyOnTheJdk;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import java.util.List;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Test;

/**
 * Every architecture rule fails on a fixture package that breaks it and passes on one that follows it, so
 * no rule passes merely because it cannot fail.
 */
class QueueBoxArchitectureRulesTest {

    private static final String GOOD = "io.queuebox.archfixture.good";
    private static final String BAD = "io.queuebox.archfixture.bad";
    private static final String CYCLE = "io.queuebox.archfixture.cycle";

    private static final JavaClasses GOOD_CLASSES = new ClassFileImporter().importPackages(GOOD);
    private static final JavaClasses BAD_CLASSES = new ClassFileImporter().importPackages(BAD);
    private static final JavaClasses CYCLE_CLASSES = new ClassFileImporter().importPackages(CYCLE);
    private static final JavaClasses NO_CLASSES = new ClassFileImporter().importClasses();

    @Test
    void portsThatDependOnTheDomainBreakThePortsRule() {
        assertViolation(portsDependOnlyOnTheJdk(BAD + ".ports"), BAD_CLASSES)
                .hasMessageContaining("PortUsingTheDomain")
                .hasMessageNotContaining("PortUsingJdbc");
        assertPasses(portsDependOnlyOnTheJdk(GOOD + ".ports"), GOOD_CLASSES);
    }

    @Test
    void aDomainThatUsesAnAdapterOrALoggerBreaksTheDomainRule() {
        assertViolation(domainDependsOnlyOnPortsAndTheJdk(BAD + ".domain", BAD + ".ports"), BAD_CLASSES)
                .hasMessageContaining("AdapterUsingRule")
                .hasMessageContaining("LoggingRule");
        assertPasses(domainDependsOnlyOnPortsAndTheJdk(GOOD + ".domain", GOOD + ".ports"), GOOD_CLASSES);
    }

    @Test
    void jdbcInThePortsOrSlf4jInTheDomainBreaksTheInfrastructureRule() {
        assertViolation(noInfrastructureIn(BAD + ".ports", BAD + ".domain"), BAD_CLASSES)
                .hasMessageContaining("PortUsingJdbc")
                .hasMessageContaining("java.sql.Connection")
                .hasMessageContaining("LoggingRule")
                .hasMessageContaining("org.slf4j.Logger");
        assertPasses(noInfrastructureIn(GOOD + ".ports", GOOD + ".domain"), GOOD_CLASSES);
    }

    @Test
    void anAdapterImportingTheDomainBreaksTheAdapterDomainRule() {
        assertViolation(adaptersDoNotDependOnTheDomain(BAD + ".domain", badAdapters()), BAD_CLASSES)
                .hasMessageContaining("DomainUsingStore");
        assertPasses(adaptersDoNotDependOnTheDomain(GOOD + ".domain", goodAdapters()), GOOD_CLASSES);
    }

    @Test
    void anAdapterImportingAnotherAdapterBreaksTheAdapterIsolationRule() {
        assertViolation(adaptersDoNotDependOnEachOther(badAdapters()), BAD_CLASSES)
                .hasMessageContaining("PublisherUsingStore");
        assertPasses(adaptersDoNotDependOnEachOther(goodAdapters()), GOOD_CLASSES);
    }

    @Test
    void anAdapterMayUseSharedSupportButTheSupportMustNotUseAnAdapter() {
        // The good postgres fixture uses the good jdbc support: the isolation rule leaves support out of its slices.
        assertThat(GOOD_CLASSES.get(GOOD + ".postgres.Store").getDirectDependenciesFromSelf())
                .anySatisfy(dependency -> assertThat(dependency.getTargetClass().getName())
                        .isEqualTo(GOOD + ".jdbc.Identifiers"));
        assertPasses(adaptersDoNotDependOnEachOther(goodAdapters()), GOOD_CLASSES);
        assertViolation(adapterSupportDependsOnNoAdapter(badSupport(), badAdapters()), BAD_CLASSES)
                .hasMessageContaining("SupportUsingPublisher")
                .hasMessageNotContaining("PublisherUsingStore");
        assertPasses(adapterSupportDependsOnNoAdapter(goodSupport(), goodAdapters()), GOOD_CLASSES);
    }

    @Test
    void sharedSupportObeysTheAdapterRulesOnTheRealPackages() {
        assertThat(QueueBoxArchitecture.ADAPTER_SUPPORT).containsExactly("io.queuebox.jdbc");
        assertThat(QueueBoxArchitecture.adapters_do_not_depend_on_the_domain.getDescription())
                .contains("io.queuebox.jdbc..");
        assertThat(QueueBoxArchitecture.adapters_do_not_depend_on_the_bootstrap.getDescription())
                .contains("io.queuebox.jdbc..");
        assertThat(QueueBoxArchitecture.adapterRules()).contains(QueueBoxArchitecture.adapter_support_depends_on_no_adapter);
    }

    @Test
    void anAdapterImportingTheBootstrapBreaksTheBootstrapRule() {
        assertViolation(adaptersDoNotDependOnTheBootstrap(BAD + ".bootstrap", badAdapters()), BAD_CLASSES)
                .hasMessageContaining("BootstrapUsingPublisher");
        assertPasses(adaptersDoNotDependOnTheBootstrap(GOOD + ".bootstrap", goodAdapters()), GOOD_CLASSES);
    }

    @Test
    void aBootstrapNamingADatabaseAdapterBreaksTheDatabasePluginRule() {
        assertViolation(theBootstrapNamesNoDatabaseAdapter(BAD + ".bootstrap", BAD + ".postgres"), BAD_CLASSES)
                .hasMessageContaining("StoreWiring");
        assertPasses(theBootstrapNamesNoDatabaseAdapter(GOOD + ".bootstrap", GOOD + ".postgres"), GOOD_CLASSES);
    }

    @Test
    void anEmbeddingLibraryUsingTheCliOrATestFrameworkBreaksTheLeanLibraryRule() {
        assertViolation(leanForEmbedders(List.of(BAD + ".embed"), List.of(BAD + ".bootstrap..", "org.junit..")),
                BAD_CLASSES)
                .hasMessageContaining("BuilderUsingTheCli")
                .hasMessageContaining("archfixture.bad.bootstrap.Main")
                .hasMessageContaining("org.junit.jupiter.api.Assertions");
        assertPasses(leanForEmbedders(List.of(GOOD + ".embed"), List.of(GOOD + ".bootstrap..", "org.junit..")),
                GOOD_CLASSES);
        assertThat(QueueBoxArchitecture.NOT_FOR_EMBEDDERS).contains("picocli..", "ch.qos.logback..", "org.junit..",
                "io.zonky..", "io.queuebox.demo..");
    }

    @Test
    void twoModulesDependingOnEachOtherBreakTheCycleRule() {
        assertViolation(modulesAreFreeOfCycles(CYCLE), CYCLE_CLASSES)
                .hasMessageContaining("archfixture.cycle.a")
                .hasMessageContaining("archfixture.cycle.b");
        assertPasses(modulesAreFreeOfCycles(GOOD), GOOD_CLASSES);
    }

    @Test
    void sleepingOrReadingTheWallClockInTheDomainBreaksTheTimeRule() {
        assertViolation(noWallClockOrSleepIn(BAD + ".domain"), BAD_CLASSES)
                .hasMessageContaining("java.lang.Thread.sleep(long)")
                .hasMessageContaining("java.time.Instant.now()")
                .hasMessageContaining("java.lang.System.currentTimeMillis()")
                .hasMessageContaining("java.time.LocalDateTime.now()");
        assertPasses(noWallClockOrSleepIn(GOOD + ".domain"), GOOD_CLASSES);
    }

    @Test
    void anAdapterReadingTheEnvironmentBreaksTheConfigurationRule() {
        assertViolation(onlyTheseReadTheEnvironment(BAD, BAD + ".bootstrap"), BAD_CLASSES)
                .hasMessageContaining("EnvironmentReadingPublisher")
                .hasMessageContaining("java.lang.System.getenv(java.lang.String)")
                .hasMessageContaining("java.lang.System.getProperty(java.lang.String)")
                .hasMessageNotContaining("bad.bootstrap.Main");
        assertPasses(onlyTheseReadTheEnvironment(GOOD, GOOD + ".bootstrap"), GOOD_CLASSES);
    }

    @Test
    void theRealEnvironmentRuleCatchesAnyPackageOutsideTheBootstrap() {
        assertViolation(QueueBoxArchitecture.only_the_bootstrap_reads_environment_variables_and_system_properties,
                BAD_CLASSES).hasMessageContaining("EnvironmentReadingPublisher");
    }

    @Test
    void adapterRulesPassOnAModuleWithoutClassesWhilePortAndDomainRulesDoNot() {
        assertPasses(QueueBoxArchitecture.adapters_do_not_depend_on_the_domain, NO_CLASSES);
        assertPasses(QueueBoxArchitecture.adapters_do_not_depend_on_each_other, NO_CLASSES);
        assertPasses(QueueBoxArchitecture.adapters_do_not_depend_on_the_bootstrap, NO_CLASSES);
        assertPasses(QueueBoxArchitecture.adapter_support_depends_on_no_adapter, NO_CLASSES);
        assertPasses(QueueBoxArchitecture.modules_are_free_of_cycles, NO_CLASSES);
        assertPasses(QueueBoxArchitecture.only_the_bootstrap_reads_environment_variables_and_system_properties,
                NO_CLASSES);
        assertViolation(QueueBoxArchitecture.ports_depend_only_on_the_jdk, NO_CLASSES);
        assertViolation(QueueBoxArchitecture.the_domain_depends_only_on_the_ports_and_the_jdk, NO_CLASSES);
    }

    @Test
    void theRulesOnTheRealPackagesAreTheTestedFactoriesAppliedToThem() {
        String[] adapters = QueueBoxArchitecture.ADAPTERS.toArray(String[]::new);
        String[] adaptersAndSupport = {"io.queuebox.postgres", "io.queuebox.sqlserver", "io.queuebox.kafka",
                "io.queuebox.rabbitmq", "io.queuebox.capture", "io.queuebox.inbox", "io.queuebox.jdbc"};
        assertSameRule(QueueBoxArchitecture.ports_depend_only_on_the_jdk, portsDependOnlyOnTheJdk("io.queuebox.ports"));
        assertSameRule(QueueBoxArchitecture.the_domain_depends_only_on_the_ports_and_the_jdk,
                domainDependsOnlyOnPortsAndTheJdk("io.queuebox.domain", "io.queuebox.ports"));
        assertSameRule(QueueBoxArchitecture.ports_and_domain_use_no_infrastructure_library,
                noInfrastructureIn("io.queuebox.ports", "io.queuebox.domain"));
        assertSameRule(QueueBoxArchitecture.adapters_do_not_depend_on_the_domain,
                adaptersDoNotDependOnTheDomain("io.queuebox.domain", adaptersAndSupport));
        assertSameRule(QueueBoxArchitecture.adapters_do_not_depend_on_the_bootstrap,
                adaptersDoNotDependOnTheBootstrap("io.queuebox.bootstrap", adaptersAndSupport));
        assertSameRule(QueueBoxArchitecture.adapter_support_depends_on_no_adapter,
                adapterSupportDependsOnNoAdapter(List.of("io.queuebox.jdbc"), adapters));
        assertSameRule(QueueBoxArchitecture.modules_are_free_of_cycles, modulesAreFreeOfCycles("io.queuebox"));
        assertSameRule(QueueBoxArchitecture.the_bootstrap_names_no_concrete_database_adapter,
                theBootstrapNamesNoDatabaseAdapter("io.queuebox.bootstrap", "io.queuebox.postgres", "io.queuebox.sqlserver"));
        assertSameRule(QueueBoxArchitecture.the_domain_neither_reads_the_wall_clock_nor_sleeps,
                noWallClockOrSleepIn("io.queuebox.domain"));
        assertThat(QueueBoxArchitecture.ADAPTERS).containsExactly("io.queuebox.postgres", "io.queuebox.sqlserver",
                "io.queuebox.kafka", "io.queuebox.rabbitmq", "io.queuebox.capture", "io.queuebox.inbox");
        assertSameRule(QueueBoxArchitecture.each_broker_client_is_used_only_by_its_inbox_helper,
                brokerClientsOnlyInTheirHelpers("io.queuebox.inbox", java.util.Map.of(
                        "org.apache.kafka", "io.queuebox.inbox.kafka", "com.rabbitmq", "io.queuebox.inbox.rabbitmq")));
        assertSameRule(QueueBoxArchitecture.adapters_do_not_depend_on_the_embedding_library,
                adaptersDoNotDependOnTheBootstrap("io.queuebox.embed", adaptersAndSupport));
        assertSameRule(QueueBoxArchitecture.the_embedding_library_names_no_concrete_database_adapter,
                theBootstrapNamesNoDatabaseAdapter("io.queuebox.embed", "io.queuebox.postgres", "io.queuebox.sqlserver"));
        assertSameRule(QueueBoxArchitecture.the_starter_names_no_concrete_database_adapter,
                theBootstrapNamesNoDatabaseAdapter("io.queuebox.spring", "io.queuebox.postgres", "io.queuebox.sqlserver"));
        assertSameRule(QueueBoxArchitecture.the_embedding_library_and_the_starter_carry_no_cli_demo_logging_backend_or_test_framework,
                leanForEmbedders(List.of("io.queuebox.embed", "io.queuebox.spring"), QueueBoxArchitecture.NOT_FOR_EMBEDDERS));
        assertThat(QueueBoxArchitecture.all()).hasSize(16).doesNotContainNull();
    }

    @Test
    void everyRuleTellsHowToFixAViolation() {
        assertThat(QueueBoxArchitecture.all()).allSatisfy(rule ->
                assertThat(rule.getDescription()).contains(", because "));
    }

    @Test
    void aBrokerClientUsedOutsideItsInboxHelperBreaksTheOptionalClientRule() {
        // The fixtures' kafka and rabbitmq packages stand in for the two broker clients.
        assertViolation(brokerClientsOnlyInTheirHelpers(BAD + ".inbox", java.util.Map.of(
                BAD + ".kafka", BAD + ".inbox.kafka", BAD + ".rabbitmq", BAD + ".inbox.rabbitmq")), BAD_CLASSES)
                .hasMessageContaining("CoreUsingABrokerClient")
                .hasMessageContaining("HelperUsingTheOtherClient")
                .hasMessageNotContaining("inbox.kafka.Helper");
        assertPasses(brokerClientsOnlyInTheirHelpers(GOOD + ".inbox", java.util.Map.of(
                GOOD + ".kafka", GOOD + ".inbox.kafka")), GOOD_CLASSES);
    }

    private static String[] badAdapters() {
        return new String[] {BAD + ".postgres", BAD + ".kafka", BAD + ".rabbitmq"};
    }

    private static List<String> badSupport() {
        return List.of(BAD + ".jdbc");
    }

    private static List<String> goodSupport() {
        return List.of(GOOD + ".jdbc");
    }

    private static String[] goodAdapters() {
        return new String[] {GOOD + ".postgres", GOOD + ".kafka"};
    }

    private static AbstractThrowableAssert<?, ? extends Throwable> assertViolation(ArchRule rule, JavaClasses classes) {
        return assertThatThrownBy(() -> rule.check(classes)).isInstanceOf(AssertionError.class);
    }

    private static void assertPasses(ArchRule rule, JavaClasses classes) {
        assertThatCode(() -> rule.check(classes)).doesNotThrowAnyException();
    }

    private static void assertSameRule(ArchRule actual, ArchRule expected) {
        assertThat(actual.getDescription()).isEqualTo(expected.getDescription());
    }
}
