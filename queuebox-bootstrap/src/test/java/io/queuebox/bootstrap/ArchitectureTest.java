package io.queuebox.bootstrap;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.junit.ArchTests;
import io.queuebox.testkit.architecture.AllRules;
import io.queuebox.testkit.architecture.QueueBoxArchitecture;

/**
 * The bootstrap sees every module it wires, so it applies every module rule of ARCHITECTURE.md to all the
 * QueueBox classes on its classpath: ports, domain, the adapters it bundles, the testkit and itself.
 */
@AnalyzeClasses(packages = QueueBoxArchitecture.ROOT, importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTest {

    @ArchTest
    static final ArchTests rules = ArchTests.in(AllRules.class);
}
