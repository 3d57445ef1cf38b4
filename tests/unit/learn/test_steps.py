from plugin.learn.steps import Learning


class Tag:
    def __init__(self, name):
        self.name = name

    def apply(self, tenant, post, result):
        return {**result, "seen": [*result.get("seen", []), (self.name, tenant, post["text"])]}


def test_no_steps_leave_the_result_itself():
    result = {"matches": []}
    assert Learning().adjust("t", {"text": "x"}, result) is result


def test_steps_run_in_order_with_the_tenant_and_post():
    out = Learning(steps=(Tag("memory"), Tag("calibration"))).adjust("t1", {"text": "p"}, {"matches": []})
    assert out["seen"] == [("memory", "t1", "p"), ("calibration", "t1", "p")]
