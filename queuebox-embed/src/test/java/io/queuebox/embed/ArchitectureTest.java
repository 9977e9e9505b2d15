package io.queuebox.embed;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.junit.ArchTests;
import io.queuebox.testkit.architecture.AllRules;
import io.queuebox.testkit.architecture.QueueBoxArchitecture;

/**
 * The embedding library sees the ports, the domain, the JDBC seam and, in tests, the adapters: every module rule
 * applies, among them that it carries no CLI, logging backend, demo or test framework.
 */
@AnalyzeClasses(packages = QueueBoxArchitecture.ROOT, importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTest {

    @ArchTest
    static final ArchTests rules = ArchTests.in(AllRules.class);
}
