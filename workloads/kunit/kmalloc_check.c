// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit checks of two kmalloc() guarantees, run in the suite's guest:
 *
 * - natural alignment: an object of a power-of-two size from kmalloc(),
 *   kmalloc_node() or krealloc() is aligned to its size (upstream
 *   59bb47985c1d, "mm, sl[aou]b: guarantee natural alignment for
 *   kmalloc(power-of-two)");
 * - accounting: allocations too large for any kmalloc cache, which come
 *   from the page allocator, count in NR_SLAB_UNRECLAIMABLE_B (SUnreclaim
 *   in /proc/meminfo) while they live (upstream 6a486c0ad4dc, "mm, sl[ou]b:
 *   improve memory accounting").
 *
 * Each check is a parameterised case, one result per size, and says what
 * it counted with kunit_info(), so that the KTAP in the kernel log carries
 * the numbers as well as the verdicts.
 */
#include <kunit/test.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/slab.h>

/* Objects allocated per size and way of allocating, for alignment. */
#define ALIGN_OBJECTS	64
/* Bytes allocated per size for the accounting check, at least. */
#define ACCOUNT_BYTES	(8UL << 20)
/*
 * Pages other activity in the guest may move the counter by while a size
 * is checked; the guest is idle, so this is generous.
 */
#define ACCOUNT_SLACK_PAGES	64

static const size_t align_sizes[] = {
	8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
	8192, 16384, 32768, 65536,
};

static void size_desc(const size_t *size, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%zu bytes", *size);
}

KUNIT_ARRAY_PARAM(align_size, align_sizes, size_desc);

static bool misaligned(void *p, size_t size)
{
	return ((unsigned long)p & (size - 1)) != 0;
}

/* The three ways of getting an object of a given size that are checked. */
enum alloc_way { BY_KMALLOC, BY_KMALLOC_NODE, BY_KREALLOC, NR_ALLOC_WAYS };

static void *alloc_by(size_t size, enum alloc_way way)
{
	void *p, *q;

	switch (way) {
	case BY_KMALLOC:
		return kmalloc(size, GFP_KERNEL);
	case BY_KMALLOC_NODE:
		return kmalloc_node(size, GFP_KERNEL, numa_node_id());
	default:
		/*
		 * Grown from half the size: the object moves to the size's
		 * cache (but for 8 bytes, where half the size comes from the
		 * same cache).
		 */
		p = kmalloc(size / 2, GFP_KERNEL);
		if (!p)
			return NULL;
		q = krealloc(p, size, GFP_KERNEL);
		if (!q)
			kfree(p);
		return q;
	}
}

static void kmalloc_natural_alignment(struct kunit *test)
{
	size_t size = *(const size_t *)test->param_value;
	void *objs[ALIGN_OBJECTS];
	unsigned int checked = 0, bad = 0;
	enum alloc_way way;
	int i, n;

	for (way = 0; way < NR_ALLOC_WAYS; way++) {
		for (n = 0; n < ALIGN_OBJECTS; n++) {
			objs[n] = alloc_by(size, way);
			if (!objs[n])
				break;
			bad += misaligned(objs[n], size);
		}
		checked += n;
		for (i = 0; i < n; i++)
			kfree(objs[i]);
		/* Whatever was allocated is freed before the case can end. */
		KUNIT_ASSERT_EQ_MSG(test, n, ALIGN_OBJECTS,
				    "allocation %d of %zu bytes (way %d) failed",
				    n, size, way);
	}

	kunit_info(test, "align size=%zu checked=%u misaligned=%u\n",
		   size, checked, bad);
	KUNIT_EXPECT_EQ(test, bad, 0U);
}

/*
 * NR_SLAB_UNRECLAIMABLE_B of every node, in pages (vmstat keeps byte items
 * in pages), with the per-CPU deltas that are not yet folded in added.
 */
static long slab_unreclaimable_pages(void)
{
	long pages = 0;
	int nid, cpu;

	for_each_online_node(nid) {
		struct pglist_data *pgdat = NODE_DATA(nid);

		pages += atomic_long_read(&pgdat->vm_stat[NR_SLAB_UNRECLAIMABLE_B]);
		for_each_online_cpu(cpu)
			pages += per_cpu_ptr(pgdat->per_cpu_nodestats, cpu)
				->vm_node_stat_diff[NR_SLAB_UNRECLAIMABLE_B];
	}
	return pages;
}

static const unsigned int large_orders[] = { 1, 2, 3, 4, 5, 6 };

static void order_desc(const unsigned int *order, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%lu bytes",
		 PAGE_SIZE << *order);
}

KUNIT_ARRAY_PARAM(large_order, large_orders, order_desc);

static bool within(long seen, long expected, long slack)
{
	return seen >= expected - slack && seen <= expected + slack;
}

static void kmalloc_large_accounting(struct kunit *test)
{
	unsigned int order = *(const unsigned int *)test->param_value;
	size_t size = PAGE_SIZE << order;
	unsigned int i, n = max_t(unsigned long, 16, ACCOUNT_BYTES / size);
	long before, up, down, expected;
	long slack = ACCOUNT_SLACK_PAGES;
	void **objs;

	if (size <= KMALLOC_MAX_CACHE_SIZE)
		kunit_skip(test, "%zu bytes come from a kmalloc cache (the largest is %lu)",
			   size, (unsigned long)KMALLOC_MAX_CACHE_SIZE);

	objs = kcalloc(n, sizeof(*objs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, objs);

	before = slab_unreclaimable_pages();
	for (i = 0; i < n; i++) {
		objs[i] = kmalloc(size, GFP_KERNEL);
		if (!objs[i])
			break;
	}
	up = slab_unreclaimable_pages() - before;
	n = i;
	expected = (long)n << order;

	before = slab_unreclaimable_pages();
	for (i = 0; i < n; i++)
		kfree(objs[i]);
	down = before - slab_unreclaimable_pages();
	kfree(objs);

	kunit_info(test, "account size=%zu allocations=%u expected=%ld seen_alloc=%ld seen_free=%ld slack=%ld (bytes)\n",
		   size, n, expected * (long)PAGE_SIZE, up * (long)PAGE_SIZE,
		   down * (long)PAGE_SIZE, slack * (long)PAGE_SIZE);
	KUNIT_ASSERT_GT(test, n, 0U);
	KUNIT_EXPECT_TRUE_MSG(test, within(up, expected, slack),
			      "allocating moved SUnreclaim by %ld pages, not %ld",
			      up, expected);
	KUNIT_EXPECT_TRUE_MSG(test, within(down, expected, slack),
			      "freeing moved SUnreclaim by %ld pages, not %ld",
			      down, expected);
}

static struct kunit_case kmalloc_check_cases[] = {
	KUNIT_CASE_PARAM(kmalloc_natural_alignment, align_size_gen_params),
	KUNIT_CASE_PARAM(kmalloc_large_accounting, large_order_gen_params),
	{}
};

static struct kunit_suite kmalloc_check_suite = {
	.name = "kmalloc_check",
	.test_cases = kmalloc_check_cases,
};

kunit_test_suite(kmalloc_check_suite);

MODULE_DESCRIPTION("kmalloc() natural alignment and large-allocation accounting");
MODULE_LICENSE("GPL");
