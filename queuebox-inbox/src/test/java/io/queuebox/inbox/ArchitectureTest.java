package io.queuebox.inbox;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.junit.ArchTests;
import com.tngtech.archunit.lang.ArchRule;
import io.queuebox.testkit.architecture.AdapterModuleRules;
import io.queuebox.testkit.architecture.QueueBoxArchitecture;

/**
 * The module rules of ARCHITECTURE.md on the inbox's main classes, and the rule that keeps its optional broker
 * clients apart: the core needs neither, each helper only its own. The testkit's QueueBoxArchitectureRulesTest
 * proves each rule fails on a bad fixture.
 */
@AnalyzeClasses(packages = "io.queuebox.inbox", importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTest {

    @ArchTest
    static final ArchTests rules = ArchTests.in(AdapterModuleRules.class);

    @ArchTest
    static final ArchRule each_broker_client_is_used_only_by_its_inbox_helper =
            QueueBoxArchitecture.each_broker_client_is_used_only_by_its_inbox_helper;
}
