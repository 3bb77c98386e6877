"""`hermes-bridge timeline` pages in headless Chromium: they render, their
script runs, no console errors, tool names shown, escaped text stays text.
In a module of its own so that, without Chromium, CTest reports it skipped."""

from __future__ import annotations

import unittest

import test_timeline


class InChromium(test_timeline.TimelineFixture):
    @classmethod
    def setUpClass(cls):
        if not test_timeline.CHROMIUM.exists():
            raise unittest.SkipTest(f"{test_timeline.CHROMIUM} missing: install the Debian package `chromium` "
                                    "(scripts/setup does) for the browser check")
        super().setUpClass()

    def test_renders_in_chromium(self):
        path, _ = self.page(self.run_id)
        dom, stderr, took = self.browse(path)
        print(f"\n  chromium --dump-dom took {took:.2f}s", flush=True)
        self.assertIn('data-timeline="ready"', dom)  # the page's script ran to its end
        self.assertIn("Click a bar to find it in the table below.", dom)
        self.assertIn(">terminal \u00b7 ", dom)
        self.assertIn("rm -rf / \u2192 once", dom)
        self.assertRegex(dom, "compression [0-9]+ \u2192 1 messages")
        self.assert_clean_console(stderr)

    def test_escaped_text_stays_text_in_chromium(self):
        path, _ = self.page(self.evil_run)
        dom, stderr, _ = self.browse(path)
        self.assertIn('data-timeline="ready"', dom)
        self.assertEqual(dom.count("<script"), 1)
        self.assertNotIn("<b>bold", dom)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", dom)
        self.assert_clean_console(stderr)


if __name__ == "__main__":
    unittest.main()
