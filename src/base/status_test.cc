#include "upguard/status.h"

#include <gtest/gtest.h>

namespace upguard {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Status Quarter(int x, int* out) {
  ASSIGN_OR_RETURN(int half, Half(x));
  ASSIGN_OR_RETURN(*out, Half(half));
  return Status::Ok();
}

TEST(StatusTest, OkAndErrorCarryCodeAndMessage) {
  EXPECT_TRUE(Status::Ok().ok());
  Status error = DataLoss("bad crc at byte 12");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.code(), StatusCode::kDataLoss);
  EXPECT_EQ(error.ToString(), "error: bad crc at byte 12");
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status status = Quarter(6, &out);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "odd: 3");
}

}  // namespace
}  // namespace upguard
